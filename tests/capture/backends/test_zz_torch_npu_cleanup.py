"""Runs after test_torch_npu.py: the contract double must not leak into other tests."""

from __future__ import annotations

import sys


def test_double_removed_after_its_tests() -> None:
    assert "torch_npu" not in sys.modules or sys.modules["torch_npu"] is None or not getattr(
        sys.modules["torch_npu"], "__version__", "").endswith("double")
