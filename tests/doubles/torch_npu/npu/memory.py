"""``torch_npu.npu.memory``: the allocator calls mindspeed-prof makes (the same as
``torch.cuda.memory``'s), over the fake device of ``tests/doubles/cuda_memory.py``."""

import cuda_memory


def reset_peak_memory_stats(device=None):
    cuda_memory.reset_peak_memory_stats(device)


def max_memory_allocated(device=None):
    return cuda_memory.max_memory_allocated(device)


def max_memory_reserved(device=None):
    return cuda_memory.max_memory_reserved(device)


def _record_memory_history(enabled="all", *args, **kwargs):
    cuda_memory._record_memory_history(enabled)


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    cuda_memory._dump_snapshot(filename)
