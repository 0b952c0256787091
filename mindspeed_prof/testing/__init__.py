"""Test support that ships with the package: the backend conformance suite,
``process_state()``, which restores what profiling changes process-wide, and ``kineto``
(CUDA-format traces for analysis tests and benchmarks)."""
