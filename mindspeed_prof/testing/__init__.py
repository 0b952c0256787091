"""Test support that ships with the package: the backend conformance suite and
``process_state()``, which restores what profiling changes process-wide."""
