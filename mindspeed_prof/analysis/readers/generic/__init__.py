"""Chrome trace JSON written by tools other than torch.profiler and torch_npu (an RL framework's
phase tracer, a Python function tracer, a compiler's trace log, a vendor's trace tool): its
duration events (``X``, and ``B``/``E`` pairs matched per process and thread) read as ranges of
their process and thread, its rank from the capture's own fields, a process name, a folder or
the file's name (``owner``), foreign RL phase names read as our stages (``readers.phases``).
``events``: what is decoded; ``fold``: the events folded a batch at a time; ``read``: a file.
"""
