"""``process_state()``: put back what profiling changes process-wide, for test isolation."""

from __future__ import annotations

import atexit
import signal
import sys
from collections.abc import Callable, Iterator, MutableSet
from contextlib import contextmanager
from types import ModuleType
from typing import ParamSpec, TypeVar
from unittest import mock

__all__ = ["MODULES", "process_state"]

_P = ParamSpec("_P")
_T = TypeVar("_T")
#: A global's contents as saved: a dict's items, or a list's or a set's members.
_Saved = dict[object, object] | list[object]

#: Modules whose globals hold process-wide state: the range sink and counters, the current
#: profilers, the live profilers and the signal handlers they replaced, the run id this process
#: exported, the bad counts already warned about.
MODULES = (
    "mindspeed_prof.mstx",
    "mindspeed_prof.capture.current",
    "mindspeed_prof.capture.crash",
    "mindspeed_prof.capture.run",
    "mindspeed_prof.capture.count",
)


@contextmanager
def process_state() -> Iterator[None]:
    """Restore, on exit, the state of ``MODULES``, the SIGTERM/SIGINT handlers, ``atexit``
    hooks registered inside that are mindspeed_prof's own (by the hook's module), the run id
    variable (``MINDSPEED_PROF_RUN``), and ``torch_npu`` modules (the contract double)
    imported inside.

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
    registered: list[Callable[..., object]] = []
    register = atexit.register

    def recording(
        func: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> Callable[_P, _T]:
        if _ours(func):  # libraries' own hooks are theirs to keep
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
                content = contents.get(id(value))
                if content is not None:
                    _refill(value, content)
        for name in [k for k in sys.modules if k == "torch_npu" or k.startswith("torch_npu.")]:
            if name not in npu:
                del sys.modules[name]


def _ours(func: Callable[..., object]) -> bool:
    """Whether ``func`` (a function or bound method) is defined in mindspeed_prof."""
    module = getattr(func, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "mindspeed_prof"


def _globals(module: ModuleType) -> dict[str, object]:
    return {
        k: v
        for k, v in vars(module).items()
        if k.startswith("_")
        and not k.startswith("__")
        and not callable(v)
        and not isinstance(v, ModuleType)
    }


def _contents(value: object) -> _Saved | None:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, MutableSet)):  # set, WeakSet
        return list(value)
    return None


def _refill(value: object, content: _Saved) -> None:
    if isinstance(value, dict) and isinstance(content, dict):
        value.clear()
        value.update(content)
    elif isinstance(value, list) and isinstance(content, list):
        value[:] = content
    elif isinstance(value, MutableSet) and isinstance(content, list):
        value.clear()
        for item in content:
            value.add(item)
