"""Device memory per stage, at an out-of-memory error, and over a window of steps: parts of the
profiler that read the caching allocator (``torch.cuda.memory`` or ``torch_npu.npu.memory``)."""
