"""Hydra integration: the callback presets turn on, and the job manifest it writes."""
