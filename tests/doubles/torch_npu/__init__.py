"""Contract double of torch-npu 2.14.0: the signatures, enum spellings and output layout that
mindspeed-prof uses, and nothing else. ``scripts/check_torch_npu_contract.py WHEEL`` compares it
with a real wheel's source.
"""

from . import npu, profiler  # noqa: F401

__version__ = "2.14.0.double"
