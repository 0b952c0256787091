"""Rollout engines with a profiler of their own (vLLM, SGLang), driven through their public API.

Only the calls each engine documents are made, with only the arguments its method takes
(read from its signature, so older releases work too):

- vLLM: ``LLM.start_profile(profile_prefix=None)`` / ``stop_profile()`` (``AsyncLLM``'s are
  coroutines). Its trace folder is fixed when the engine is made (``profiler_config`` /
  ``--profiler-config``'s ``torch_profiler_dir``, or the older ``VLLM_TORCH_PROFILER_DIR``); its
  workers name their files ``<prefix>_dp<X>_pp<Y>_tp<Z>.*``. The files of a capture are found
  there by our prefix and moved under the save root.
- SGLang: ``Engine.start_profile(output_dir=..., activities=..., with_stack=...,
  record_shapes=...)`` / ``stop_profile()``; it writes into ``output_dir``, given per capture
  (``SGLANG_TORCH_PROFILER_DIR`` is its default when none is given).

``stamp`` writes our ``mindspeed_prof`` block (run, rank, step, stage, engine) into a trace the
engine wrote, so the analysis reads it with the trainer's rank and step, not the engine
worker's own rank.
"""

from __future__ import annotations

import asyncio
import gzip
import inspect
import json
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from mindspeed_prof.formats.header import CaptureHeader, header_dict

__all__ = ["ENGINES", "Engine", "EngineDriver", "EngineKind", "engine_kind", "stamp"]

#: The engines driven here.
EngineKind = Literal["vllm", "sglang"]
ENGINES: tuple[EngineKind, ...] = ("vllm", "sglang")
#: The engine's own trace files (Kineto's JSON, plain or gzipped).
_TRACE_SUFFIXES = (".json", ".json.gz")
_CHUNK = 1 << 20


class Engine(Protocol):
    """A rollout engine with a profiler of its own (its methods may be coroutines)."""

    @property
    def start_profile(self) -> Callable[..., object]: ...

    @property
    def stop_profile(self) -> Callable[..., object]: ...


def _kind(name: str) -> EngineKind | None:
    return next((k for k in ENGINES if k == name), None)


def engine_kind(engine: object, kind: str = "auto") -> EngineKind:
    """``vllm`` or ``sglang`` for ``engine``: ``kind`` when given, else from its class's module
    (``vllm.*``, ``sglang.*``). ``ValueError`` names what is allowed."""
    if kind != "auto":
        known = _kind(kind)
        if known is None:
            raise ValueError(f"attach_engine kind={kind!r}: allowed: auto, {', '.join(ENGINES)}")
        return known
    module = _kind(type(engine).__module__.split(".")[0])
    if module is not None:
        return module
    raise ValueError(
        f"attach_engine: cannot tell the engine kind of {type(engine).__qualname__} "
        f"(module {type(engine).__module__}); pass kind= one of {', '.join(ENGINES)}"
    )


def _call(method: Callable[..., object], **wanted: object) -> None:
    """``method`` with those of ``wanted`` it takes; a coroutine is run to its end (in a new
    loop, or, inside a running one, scheduled on it)."""
    try:
        params = inspect.signature(method).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        kwargs = {k: v for k, v in wanted.items() if takes_any or k in params}
    except (TypeError, ValueError):  # a builtin or Ray actor method: no signature
        kwargs = {}
    result = method(**kwargs)
    if inspect.isawaitable(result):
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(_wait(result))
        else:
            loop.create_task(_wait(result))


async def _wait(awaitable: Awaitable[object]) -> object:
    return await awaitable


class EngineDriver:
    """Starts and stops one engine's profiler into a folder; ``collect`` returns the trace files
    of the capture that last stopped, in that folder."""

    def __init__(
        self,
        engine: Engine,
        kind: EngineKind,
        *,
        profiler_dir: str | Path | None = None,
        activities: list[str] | None = None,
        with_stack: bool = False,
        record_shapes: bool = False,
    ) -> None:
        self.engine, self.kind = engine, kind
        self.activities, self.with_stack, self.record_shapes = activities, with_stack, record_shapes
        self._profiler_dir = Path(profiler_dir) if profiler_dir else None
        self._folder: Path | None = None
        self._prefix = ""

    def start(self, folder: Path) -> None:
        self._folder, self._prefix = folder, folder.name
        folder.mkdir(parents=True, exist_ok=True)
        if self.kind == "vllm":
            _call(self.engine.start_profile, profile_prefix=self._prefix)
        else:
            _call(
                self.engine.start_profile,
                output_dir=str(folder),
                activities=self.activities,
                with_stack=self.with_stack,
                record_shapes=self.record_shapes,
            )

    def stop(self) -> None:
        _call(self.engine.stop_profile)

    def collect(self, folder: Path | None = None) -> list[Path]:
        """The traces a capture wrote (the last one's, or the one of ``folder``), inside its
        folder (vLLM's moved there from its own folder, found by the capture's prefix)."""
        folder = self._folder if folder is None else folder
        if folder is None:
            return []
        if self.kind == "vllm":
            source = self.vllm_dir()
            if source is not None and source.is_dir() and source.resolve() != folder.resolve():
                for path in sorted(source.iterdir()):
                    if (
                        path.name.startswith((f"{folder.name}_", f"{folder.name}."))
                        and path.is_file()
                    ):
                        shutil.move(str(path), str(folder / path.name))
        return sorted(
            p for p in folder.rglob("*") if p.is_file() and p.name.endswith(_TRACE_SUFFIXES)
        )

    def vllm_dir(self) -> Path | None:
        """vLLM's trace folder: given, else its config's ``torch_profiler_dir``, else the
        environment's ``VLLM_TORCH_PROFILER_DIR``."""
        if self._profiler_dir is not None:
            return self._profiler_dir
        for path in ("llm_engine.vllm_config.profiler_config", "vllm_config.profiler_config"):
            node: object = self.engine
            for part in path.split("."):
                node = getattr(node, part, None)
            found = getattr(node, "torch_profiler_dir", None)
            if found:
                return Path(found)
        env = os.environ.get("VLLM_TORCH_PROFILER_DIR")
        return Path(env) if env else None


def stamp(path: Path, block: CaptureHeader) -> bool:
    """Write ``"mindspeed_prof": block`` first in the JSON object of ``path`` (plain or gzipped),
    rewritten aside and renamed into place; False (the file untouched) when it is not a JSON
    object or already has one."""
    gz = path.name.endswith(".gz")
    with _open(path, "rb", gz) as f:
        head = f.read(4096)
    start = len(head) - len(head.lstrip())
    if head[start : start + 1] != b"{" or b'"mindspeed_prof"' in head:
        return False
    tmp = path.with_name(path.name + ".tmp")
    inserted = b'{"mindspeed_prof": ' + json.dumps(header_dict(block)).encode() + b","
    try:
        with _open(path, "rb", gz) as src, _open(tmp, "wb", gz) as dst:
            src.read(start + 1)
            dst.write(inserted)
            rest = src.read(_CHUNK)
            if rest.lstrip().startswith(b"}"):  # an empty object: no comma after ours
                dst.write(b'"traceEvents": []')
            while rest:
                dst.write(rest)
                rest = src.read(_CHUNK)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _open(path: Path, mode: Literal["rb", "wb"], gz: bool) -> gzip.GzipFile | BinaryIO:
    """``path`` opened in binary ``mode``, through gzip when ``gz``."""
    return gzip.open(path, mode) if gz else open(path, mode)
