"""Test support that ships with the package: the backend conformance suite."""
