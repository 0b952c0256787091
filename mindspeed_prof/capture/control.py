"""On-demand capture requests through a folder under the save root (``<save>/control/``).

The command writes one JSON file per request into ``requests/`` (atomically); each rank checks
the folder at most once per interval at a step boundary, applies each request once (an ack
file per rank survives restarts), and writes its progress to ``acks/``. torch_npu's dynamic
profiling ``profiler_config.json`` fields are accepted too (see ``from_npu``). In a Ray worker
the same check also asks the job's board (``board.py``), which needs no shared filesystem.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.config.schema import Level, Stage

if TYPE_CHECKING:
    from mindspeed_prof.capture.board import BoardLink

__all__ = ["ACKS", "CONTROL", "REQUESTS", "ControlChannel", "Request", "read_acks",
           "write_request"]

log = logging.getLogger("mindspeed_prof")

CONTROL, REQUESTS, ACKS = "control", "requests", "acks"
_LEVELS = tuple(level.value for level in Level)
_NPU_LEVELS = {"level_none": "level_none", "level0": "level0", "level1": "level1",
               "level2": "level2"}
_GRACE_S = 2.0  # a malformed file younger than this may still be being written
_NPU_KEYS = {"start_step", "active", "experimental_config", "is_rank", "prof_dir"}


@dataclass(frozen=True)
class Request:
    """One request: capture the next ``steps`` steps (``0``: none) on ``ranks`` (None: all)
    of workers of ``role`` (None: any), whole steps or each execution of ``stage``; ``flight``
    also dumps the flight recorder. ``start_step``: not before this step."""

    id: str
    created: float
    expires: float
    steps: int = 2
    ranks: list[int] | None = None
    role: str | None = None
    stage: str | None = None
    level: str | None = None
    preset: str | None = None
    flight: bool = False
    start_step: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, timeout_s: float, **values: Any) -> Request:
        now = time.time()
        return cls(id=f"{time.time_ns()}-{uuid.uuid4().hex[:8]}", created=now,
                   expires=now + timeout_s, **values).checked()

    @classmethod
    def parse(cls, data: Any) -> Request:
        """A request from JSON (ours, or torch_npu's profiler_config.json); ValueError if bad."""
        if not isinstance(data, dict):
            raise ValueError("a request is a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}; allowed: {', '.join(sorted(names))}")
        missing = [n for n in ("id", "created", "expires") if n not in data]
        if missing:
            raise ValueError(f"field {missing[0]!r} missing")
        return cls(**data).checked()

    def checked(self) -> Request:
        def bad(name: str, allowed: str) -> ValueError:
            return ValueError(f"{name}={getattr(self, name)!r}: {allowed}")

        if not isinstance(self.steps, int) or isinstance(self.steps, bool) or self.steps < 0:
            raise bad("steps", "must be an integer >= 0")
        if self.steps == 0 and not self.flight:
            raise bad("steps", "0 asks for nothing; give steps >= 1 or flight")
        if self.ranks is not None and (not isinstance(self.ranks, list) or not all(
                isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in self.ranks)):
            raise bad("ranks", "must be a list of integers >= 0")
        if self.level is not None and self.level not in _LEVELS:
            raise bad("level", f"allowed: {', '.join(_LEVELS)}")
        if self.stage is not None and self.stage not in {s.value for s in Stage}:
            raise bad("stage", f"allowed: {', '.join(s.value for s in Stage)}")
        if self.preset is not None:
            from mindspeed_prof.config.presets import PRESETS

            if self.preset not in PRESETS or self.preset == "none":
                allowed = ", ".join(p for p in PRESETS if p != "none")
                raise bad("preset", f"allowed: {allowed}")
        for name in ("created", "expires"):
            if not isinstance(getattr(self, name), (int, float)):
                raise bad(name, "must be a time in seconds since the epoch")
        return self

    def for_worker(self, rank: int, role: str) -> bool:
        return (self.ranks is None or rank in self.ranks) and self.role in (None, role)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def from_npu(data: dict[str, Any], ident: str) -> dict[str, Any]:
    """torch_npu's dynamic-profiling ``profiler_config.json`` as a request.

    Mapped: ``active`` -> steps, ``start_step`` -> start_step, ``is_rank``/``rank_list`` ->
    ranks, ``experimental_config.profiler_level`` -> level, ``record_shapes``,
    ``profile_memory``, ``with_stack``, ``with_modules`` -> the same capture options.
    Not mapped (the job's config decides): ``prof_dir`` (captures go under the save root),
    ``activities``, ``analyse``, ``warmup``, ``with_flops``, ``async_mode``, and the other
    ``experimental_config`` fields (aic_metrics, export_type, data_simplification, ...).
    """
    now = time.time()
    exp = data.get("experimental_config") or {}
    level = str(exp.get("profiler_level", "")).lower() or None
    ranks = data.get("rank_list") if data.get("is_rank") else None
    overrides = {ours: bool(data[theirs]) for theirs, ours in (
        ("record_shapes", "profile_record_shapes"), ("profile_memory", "profile_with_memory"),
        ("with_stack", "with_stack"), ("with_modules", "profile_with_module")) if theirs in data}
    start = data.get("start_step")
    return {"id": ident, "created": now,
            "expires": now + 3600.0, "steps": int(data.get("active", 1)),
            "ranks": list(ranks) if ranks else None,
            "level": _NPU_LEVELS.get(level or "", level), "overrides": overrides,
            "start_step": int(start) if isinstance(start, int) and start > 0 else None}


def _world_size() -> int:
    try:
        return int(os.environ.get("WORLD_SIZE", "0"))
    except ValueError:
        return 0


def _board_link() -> BoardLink | None:
    """This process's link to its Ray job's board, when it is a Ray worker (ray imported)."""
    if "ray" not in sys.modules:
        return None
    from mindspeed_prof.capture.board import BoardLink

    try:
        return BoardLink.here()
    except Exception as err:  # never a reason to stop training
        log.warning("mindspeed-prof: no on-demand capture through Ray: %s", err)
        return None


def write_request(root: Path, request: Request) -> Path:
    """Put ``request`` where jobs saving to ``root`` look (written aside, then renamed)."""
    folder = root / CONTROL / REQUESTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{request.id}.json"
    tmp = folder / f".{request.id}.tmp"
    tmp.write_text(json.dumps(request.to_json()))
    os.replace(tmp, path)
    return path


def read_acks(root: Path, ident: str) -> list[dict[str, Any]]:
    """What each rank reported about request ``ident`` (unreadable acks are skipped)."""
    out = []
    for path in sorted((root / CONTROL / ACKS).glob(f"{ident}.*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


class ControlChannel:
    """Job side: the requests for one worker, each returned once, checked at most once per
    ``interval_s``; bad or expired files are ignored with one warning each."""

    def __init__(self, root: Path, interval_s: float = 1.0) -> None:
        self.root = root
        self.interval_ns = int(interval_s * 1e9)
        self.due_ns = 0  # perf_counter_ns() at which the next check is due
        self._seen: set[str] = set()
        self._board = _board_link()  # in a Ray worker: its job's board too
        self._from_board: set[str] = set()

    def poll(self, rank: int, role: str, step: int | None) -> list[Request]:
        """New requests for ``rank``/``role`` that may start at ``step``, oldest first.

        A file is known by its name and modification time, so editing a torch_npu-style
        ``profiler_config.json`` in place asks again, as it does for torch_npu. In a Ray
        worker, the requests on its job's board follow those from the folder.
        """
        found = self._poll_folder(rank, role, step)
        if self._board is not None:
            for data in self._board.poll(rank, role, step):
                try:
                    request = Request.parse(data)
                except (ValueError, TypeError) as err:  # the board checks; this is belt and braces
                    log.warning("mindspeed-prof: ignoring capture request %s from the board: %s",
                                data.get("id"), err)
                    continue
                self._from_board.add(request.id)
                found.append(request)
        return found

    def _poll_folder(self, rank: int, role: str, step: int | None) -> list[Request]:
        try:
            entries = sorted((e.name, e.stat().st_mtime_ns) for e in
                             os.scandir(self.root / CONTROL / REQUESTS) if e.name.endswith(".json"))
        except OSError:
            return []
        found = []
        for name, mtime_ns in entries:
            key = f"{name}@{mtime_ns}"
            if key in self._seen:
                continue
            request = self._read(self.root / CONTROL / REQUESTS / name, key, mtime_ns)
            if request is None:
                continue
            if request.start_step is not None and (step is None or step < request.start_step):
                continue  # not yet: looked at again at a later check
            self._seen.add(key)
            if self._acked(request.id, rank):
                continue  # applied before a restart
            world = _world_size()
            if rank == 0 and world and request.ranks and min(request.ranks) >= world:
                log.warning("mindspeed-prof: ignoring capture request %s: ranks %s do not exist "
                            "(WORLD_SIZE=%d)", request.id, request.ranks, world)
            if request.for_worker(rank, role):
                found.append(request)
        return found

    def _read(self, path: Path, key: str, mtime_ns: int) -> Request | None:
        try:
            data = json.loads(path.read_text())
        except OSError:
            return None  # removed meanwhile
        except ValueError as err:
            if time.time() - mtime_ns / 1e9 < _GRACE_S:
                return None  # maybe still being written: looked at again next time
            self._ignore(path, key, f"not complete JSON ({err})")
            return None
        try:
            if isinstance(data, dict) and "id" not in data and _NPU_KEYS & set(data):
                data = from_npu(data, f"npu-{path.stem}-{mtime_ns}")
            request = Request.parse(data)
        except (ValueError, TypeError) as err:
            self._ignore(path, key, f"malformed: {err}")
            return None
        if request.expires < time.time():
            self._ignore(path, key, "expired (the command that wrote it gave up)")
            return None
        return request

    def _ignore(self, path: Path, key: str, why: str) -> None:
        self._seen.add(key)
        log.warning("mindspeed-prof: ignoring capture request %s: %s", path, why)

    def _acked(self, ident: str, rank: int) -> bool:
        return (self.root / CONTROL / ACKS / f"{ident}.rank{rank}.json").exists()

    def ack(self, request: Request, rank: int, role: str, status: str,
            files: list[str] | None = None, message: str = "") -> None:
        """Record what this rank did about ``request`` (the command waits on these): in the
        folder, or on the board the request came from."""
        values = {"id": request.id, "rank": rank, "role": role, "status": status,
                  "files": files or [], "message": message, "time": time.time(),
                  "root": str(self.root), "host": host_name()}
        if self._board is not None and request.id in self._from_board:
            self._board.ack(values)
            return
        folder = self.root / CONTROL / ACKS
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{request.id}.rank{rank}.json"
            tmp = folder / f".{request.id}.rank{rank}.tmp"
            tmp.write_text(json.dumps(values))
            os.replace(tmp, path)
        except OSError as err:
            log.warning("mindspeed-prof: could not acknowledge request %s: %s", request.id, err)
