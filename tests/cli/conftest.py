"""Command-line tests: every command run in-process through ``mindspeed_prof.cli.main``."""
