"""``process_state()`` puts back everything a profiler changes process-wide."""

from __future__ import annotations

import signal
import subprocess
import sys
import types
from pathlib import Path

from mindspeed_prof import Profiler, current, mstx
from mindspeed_prof.capture import current as current_module
from mindspeed_prof.testing.state import process_state


def test_state_left_by_an_open_profiler_is_restored(tmp_path: Path) -> None:
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    with process_state():
        prof = Profiler.from_config(
            {"profile": True, "backend": "none", "profile_save_path": str(tmp_path)}
        )
        prof.on_step_start(1)  # a capture is open: sink set, handlers and atexit installed
        assert mstx.active_sink() is not None and current() is prof
        assert signal.getsignal(signal.SIGTERM) is not handlers[signal.SIGTERM]
        sys.modules["torch_npu"] = types.ModuleType("torch_npu")
    assert mstx.active_sink() is None
    assert current_module.get_current() is None
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert "torch_npu" not in sys.modules
    prof.close()


def test_closing_the_last_profiler_restores_handlers_itself(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGINT)
    cfg = {"profile": True, "backend": "none", "profile_save_path": str(tmp_path)}
    a, b = Profiler.from_config(cfg, role="actor"), Profiler.from_config(cfg, role="rollout")
    assert signal.getsignal(signal.SIGINT) is not before
    a.close()
    assert signal.getsignal(signal.SIGINT) is not before  # b still needs them
    b.close()
    assert signal.getsignal(signal.SIGINT) is before


def test_our_atexit_hooks_registered_inside_are_dropped() -> None:
    code = (
        "import atexit\nfrom mindspeed_prof.testing.state import process_state\n"
        "ours = {'__name__': 'mindspeed_prof.probe', 'atexit': atexit}\n"
        "with process_state():\n"
        "    exec(\"def hook(): print('LEAKED')\\natexit.register(hook)\", ours)\n"
        "    atexit.register(lambda: print('KEPT'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["KEPT"]  # ours dropped; a library's own hook kept
