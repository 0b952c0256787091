"""Where layers above capture plug into it: a carrier's worker side for on-demand capture
(besides the save root's folder) and telemetry sinks by name.

A layer registers its parts when its module is imported (``add_source``, ``add_sink``). Capture
names the module that serves each framework (``SOURCES``, ``SINKS``) and imports it when that
framework is in the process (a request source) or a sink of its name is wanted, as Hydra imports
its plugins to find them: capture never imports the layer's code itself, nor the framework (Ray
is not imported, nor started, for a process that has not done so itself).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from importlib import import_module

from mindspeed_prof.capture.control.channel import RequestSource
from mindspeed_prof.capture.telemetry.sinks import Sink

__all__ = ["SINKS", "SOURCES", "add_sink", "add_source", "sink", "sources"]

log = logging.getLogger("mindspeed_prof")

#: The module that registers a request source for each framework (its name as imported).
SOURCES = {"ray": "mindspeed_prof.ray.board"}
#: The module that registers each sink ``telemetry`` may name besides the package's own.
SINKS = {"ray": "mindspeed_prof.ray.telemetry"}

#: This process's worker side of a carrier, or None where it has none (not a Ray actor).
SourceFactory = Callable[[], RequestSource | None]

_SOURCES: dict[str, SourceFactory] = {}
_SINKS: dict[str, Callable[[], Sink]] = {}


def add_source(name: str, factory: SourceFactory) -> None:
    """Register the carrier ``name``'s worker side (``factory`` is called by each profiler with
    on-demand capture, once)."""
    _SOURCES[name] = factory


def add_sink(name: str, factory: Callable[[], Sink]) -> None:
    """Register the telemetry sink ``telemetry: [name]`` asks for."""
    _SINKS[name] = factory


def _load(modules: Iterable[str]) -> None:
    for module in modules:
        if module in sys.modules:
            continue
        try:
            import_module(module)
        except Exception as err:  # never a reason to stop training
            log.warning(
                "mindspeed-prof: %s is not available: %s: %s", module, type(err).__name__, err
            )


def sources() -> list[RequestSource]:
    """This process's sources from the layers above, for the frameworks it has imported; a
    source that cannot be made is one warning."""
    _load(m for framework, m in SOURCES.items() if framework in sys.modules)
    out = []
    for name, factory in list(_SOURCES.items()):
        try:
            source = factory()
        except Exception as err:
            log.warning("mindspeed-prof: no on-demand capture through %s: %s", name, err)
            continue
        if source is not None:
            out.append(source)
    return out


def sink(name: str) -> Sink | None:
    """A new sink ``name`` from the layer that serves it, or None where none does."""
    _load([SINKS[name]] if name in SINKS else [])
    factory = _SINKS.get(name)
    return factory() if factory is not None else None
