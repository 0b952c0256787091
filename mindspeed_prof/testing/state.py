"""``process_state()``: put back what profiling changes process-wide, for test isolation."""

from __future__ import annotations

import atexit
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any
from unittest import mock

__all__ = ["MODULES", "process_state"]

#: Modules whose globals hold process-wide state: the range sink and counters, the current
#: profilers, the live profilers and the signal handlers they replaced, the run id this process
#: exported, the bad counts already warned about.
MODULES = ("mindspeed_prof.mstx", "mindspeed_prof.capture.current",
           "mindspeed_prof.capture.crash", "mindspeed_prof.capture.run",
           "mindspeed_prof.capture.count")


@contextmanager
def process_state() -> Iterator[None]:
    """Restore, on exit, the state of ``MODULES``, the SIGTERM/SIGINT handlers, ``atexit``
    hooks mindspeed_prof registered inside, the run id variable (``MINDSPEED_PROF_RUN``), and
    ``torch_npu`` modules (the contract double) imported inside.

    Like Hydra's test utilities for its singletons: with it around every test, no test depends
    on which tests ran before it.
    """
    import importlib
    import os

    from mindspeed_prof.formats.run import RUN_ENV

    run_env = os.environ.get(RUN_ENV)
    modules = [importlib.import_module(name) for name in MODULES]
    saved = [(m, _globals(m)) for m in modules]
    contents = {id(v): _contents(v) for _, g in saved for v in g.values()}
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    npu = {k for k in sys.modules if k == "torch_npu" or k.startswith("torch_npu.")}
    registered: list[Callable[..., Any]] = []
    register = atexit.register

    def recording(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.split(".")[0] == "mindspeed_prof":  # libraries' own hooks are theirs to keep
            registered.append(func)
        return register(func, *args, **kwargs)

    try:
        with mock.patch.object(atexit, "register", recording):
            yield
    finally:
        if run_env is None:
            os.environ.pop(RUN_ENV, None)
        else:
            os.environ[RUN_ENV] = run_env
        for func in registered:
            atexit.unregister(func)
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
        for module, values in saved:
            for name, value in values.items():
                setattr(module, name, value)
                if contents.get(id(value)) is not None:
                    _refill(value, contents[id(value)])
        for name in [k for k in sys.modules if k == "torch_npu" or k.startswith("torch_npu.")]:
            if name not in npu:
                del sys.modules[name]


def _globals(module: ModuleType) -> dict[str, Any]:
    return {k: v for k, v in vars(module).items()
            if k.startswith("_") and not k.startswith("__") and not callable(v)
            and not isinstance(v, ModuleType)}


def _contents(value: Any) -> Any:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    if hasattr(value, "add") and hasattr(value, "clear"):  # set, WeakSet
        return list(value)
    return None


def _refill(value: Any, content: Any) -> None:
    value.clear()
    if isinstance(value, dict):
        value.update(content)
    elif isinstance(value, list):
        value.extend(content)
    else:
        for item in content:
            value.add(item)
