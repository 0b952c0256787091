"""torch.profiler/Kineto captures: Chrome trace JSON (and the span recorder's range files), the
db export, torch's memory files, the device a trace names."""
