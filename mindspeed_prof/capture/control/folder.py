"""On-demand capture requests through a folder under the save root (``<save>/control/``).

The command writes one JSON file per request into ``requests/`` (aside, then renamed); each worker
looks at the folder at most once per interval, at a step start, applies each request once (an ack
file per rank survives restarts), writes its progress to ``acks/`` and the step it is at to
``workers/`` (so the command can start every rank's capture at the same step). torch_npu's
dynamic-profiling ``profiler_config.json`` is accepted too (``request.from_npu``).

Whatever is in the folder is hostile input: a file is read only when it is a regular file of at
most ``MAX_REQUEST_BYTES``, never through a symbolic link; what the job writes goes only to the
real ``control/`` folder inside the save root (a link there is not followed); each bad file is
ignored with one warning (at most ``WARNINGS_PER_LOOK`` a look, the rest counted in one line).

No decision here compares the job's clock with another machine's: a request lives until the
command that wrote it withdraws it (it removes the file when it gives up), and a file is given
``_GRACE_S`` to be completed counted on the job's own monotonic clock from when it was first
seen incomplete.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from pathlib import Path

import msgspec

from mindspeed_prof.capture.control.channel import Status, Worker, wait_for_workers
from mindspeed_prof.capture.control.request import Ack, Request, from_npu
from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.jsonio import Json, JsonObject, Refused, read_json, write_atomic

__all__ = [
    "ACKS",
    "CONTROL",
    "MAX_REQUEST_BYTES",
    "REQUESTS",
    "NEW_ROOT_WAIT_S",
    "WORKERS",
    "Folder",
    "read_acks",
    "write_request",
]

log = logging.getLogger("mindspeed_prof")

CONTROL, REQUESTS, ACKS, WORKERS = "control", "requests", "acks", "workers"
#: Larger request files are not read.
MAX_REQUEST_BYTES = 64 * 1024
#: Request files looked at per look (the oldest names first); more wait for later looks.
MAX_FILES_PER_LOOK = 256
#: Warnings about bad files per look; the rest are counted in one line.
WARNINGS_PER_LOOK = 5
_GRACE_S = 2.0  # a file seen incomplete for less than this may still be being written
_SETTLE_S = 3.0  # the command, with no ranks named: settled once acks stop changing this long
#: A save root that did not exist: how long the command waits for a job to look at it.
NEW_ROOT_WAIT_S = 10.0
_NPU_KEYS = {"start_step", "active", "experimental_config", "is_rank", "prof_dir"}


def _folder(root: Path, *parts: str, create: bool = False) -> Path | None:
    """``root/control/parts...`` when every part of it below ``root`` is a real folder (made
    when ``create``); None when one is missing or is a link, file or anything else."""
    path = root
    for part in (CONTROL, *parts):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if not create:
                return None
            try:
                path.mkdir()
            except FileExistsError:
                pass
            mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            return None
    return path


def _write_json(folder: Path, name: str, values: JsonObject) -> Path:
    """``folder/name`` written through a new temporary file, then renamed in (a link at
    ``name`` is replaced, not followed; one planted at a temporary name is never used)."""
    path = folder / name
    write_atomic(path, json.dumps(values).encode())
    return path


def _read_json(path: Path) -> Json:
    """A regular file's JSON (never through a link, at most ``MAX_REQUEST_BYTES``);
    ``Refused`` or ``json.JSONDecodeError`` (both ``ValueError``) when not readable as such."""
    data: Json = read_json(path, MAX_REQUEST_BYTES)
    return data


def write_request(root: Path, request: Request) -> Path:
    """Put ``request`` where jobs saving to ``root`` look (``root`` must exist)."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder")
    folder = _folder(root, REQUESTS, create=True)
    if folder is None:
        raise OSError(f"{root / CONTROL / REQUESTS} is not a folder")
    return _write_json(folder, f"{request.id}.json", request.to_json())


def read_acks(root: Path, ident: str) -> list[Ack]:
    """What each worker reported about request ``ident`` (unreadable acks are skipped)."""
    folder = _folder(root, ACKS)
    out: list[Ack] = []
    for path in sorted(folder.glob(f"{ident}.*.json")) if folder is not None else []:
        try:
            ack = Ack.parse(_read_json(path))
        except (OSError, ValueError):
            continue
        if ack is not None and ack.id == ident:
            out.append(ack)
    return out


def read_workers(root: Path) -> list[Worker]:
    """The workers that looked at the folder, with the step each was at."""
    folder = _folder(root, WORKERS)
    out = []
    for path in sorted(folder.glob("*.json")) if folder is not None else []:
        try:
            worker = _told(_read_json(path))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        out.append(worker)
    return out


def _told(data: Json) -> Worker:
    """A worker file (anyone may write there): each field converted, a step that is not an
    integer unknown, a missing rate 0; ``KeyError``, ``TypeError`` or ``ValueError`` when
    it is not one."""
    if not isinstance(data, dict):
        raise TypeError("not an object")
    step, rank, time_, rate = data["step"], data["rank"], data["time"], data.get("rate", 0.0)
    if (
        not isinstance(rank, (int, float, str))
        or not isinstance(time_, (int, float, str))
        or not isinstance(rate, (int, float, str))
    ):
        raise TypeError("not a number")
    return Worker(
        int(rank),
        str(data["role"]),
        step if isinstance(step, int) else None,
        float(time_),
        float(rate),
    )


class Folder:
    """The carrier through the folder under a save root (``channel.Carrier``).

    The worker's side (``poll``, ``ack``): new requests for it, each returned once; bad,
    expired or unreadable files are ignored with one warning each (bounded per look). The
    command's side (``open``, ``workers``, ``post``, ``status``, ``close``): the save root
    need not exist yet (``open`` makes it, ``close`` removes it again if left empty)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # the worker's side
        self._seen: set[str] = set()
        self._incomplete: dict[str, float] = {}  # key: when first seen incomplete (monotonic)
        self._warned = 0  # warnings this look
        self._unsaid: dict[str, int] = {}  # reasons not warned about this look, counted
        # the command's side
        self._state = ""
        self._changed = time.monotonic()
        self._marker: Path | None = None
        self._made: list[Path] = []  # folders this command made, removed again if left empty

    @property
    def where(self) -> str:
        requests = self.root / CONTROL / REQUESTS
        return f"it looks at {requests} at most once a second, at a step start"

    @property
    def hint(self) -> str:
        return (
            f"Is a job saving to {self.root} running, with on_demand: true, calling the step hooks?"
        )

    # -- the worker's side ----------------------------------------------------------------
    def poll(self, worker: Worker) -> list[Request]:
        """New requests for this worker, oldest first.

        A file is known by its name and modification time, so editing a torch_npu-style
        ``profiler_config.json`` in place asks again, as it does for torch_npu. While a
        command asks (anything is in ``requests/``), the worker tells where it is.
        """
        rank, role = worker.rank, worker.role
        folder = _folder(self.root, REQUESTS)
        if folder is None:
            return []
        try:
            with os.scandir(folder) as it:
                names = [(e.name, e.stat(follow_symlinks=False).st_mtime_ns) for e in it]
        except OSError:
            return []
        if names:
            self._beat(worker)
        entries = sorted((n, m) for n, m in names if n.endswith(".json") and n[:1] != ".")
        keys = {f"{name}@{mtime}" for name, mtime in entries}
        self._seen &= keys  # forget files that are gone: memory stays bounded by the folder
        self._incomplete = {k: t for k, t in self._incomplete.items() if k in keys}
        self._warned, self._unsaid = 0, {}
        found = []
        for name, mtime_ns in [e for e in entries if f"{e[0]}@{e[1]}" not in self._seen][
            :MAX_FILES_PER_LOOK
        ]:
            key = f"{name}@{mtime_ns}"
            request = self._read(folder / name, key, mtime_ns)
            if request is None:
                continue
            self._seen.add(key)
            if self._acked(request.id, rank, role):
                continue  # applied before a restart
            if request.for_worker(rank, role):
                found.append(request)
        if self._unsaid:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(self._unsaid.items()))
            log.warning(
                "mindspeed-prof: ignoring %d more capture requests in %s (%s)",
                sum(self._unsaid.values()),
                folder,
                reasons,
            )
        return found

    def ack(self, request: Request, ack: Ack) -> None:
        """Record what this worker did about ``request`` (the command waits on these)."""
        try:
            folder = _folder(self.root, ACKS, create=True)
            if folder is None:
                raise OSError(f"{self.root / CONTROL / ACKS} is not a folder")
            _write_json(folder, f"{request.id}.{ack.role}.rank{ack.rank}.json", ack.to_json())
        except OSError as err:
            log.warning("mindspeed-prof: could not acknowledge request %s: %s", request.id, err)

    def _beat(self, worker: Worker) -> None:
        """Where this worker is, for a command that asks: it starts the capture of every rank
        at the same step. A job nobody asks writes nothing."""
        try:
            folder = _folder(self.root, WORKERS, create=True)
            if folder is not None:
                _write_json(
                    folder,
                    f"{worker.role}.rank{worker.rank}.json",
                    {**worker.to_json(), "host": host_name(), "pid": os.getpid()},
                )
        except OSError:
            pass  # a read-only or full disk: requests are still read

    def _read(self, path: Path, key: str, mtime_ns: int) -> Request | None:
        try:
            data = _read_json(path)
        except FileNotFoundError:
            return None  # removed meanwhile
        except (OSError, ValueError) as err:
            if isinstance(err, json.JSONDecodeError) and self._young(key):
                return None  # maybe still being written: looked at again next time
            why = "not complete JSON" if isinstance(err, json.JSONDecodeError) else "unreadable"
            said = err.reason if isinstance(err, Refused) else str(err)
            self._ignore(path, key, why, f"{why} ({said[:80]})")
            return None
        try:
            fields: object = data
            if isinstance(data, dict) and "id" not in data and _NPU_KEYS & set(data):
                fields = from_npu(data, f"npu-{_token(path.stem)}-{mtime_ns}")
            request = Request.parse(fields)
        except (ValueError, TypeError) as err:
            self._ignore(path, key, "malformed", f"malformed: {str(err)[:160]}")
            return None
        if request.expires <= request.created:
            self._ignore(path, key, "expired", "expired (its timeout is not positive)")
            return None
        return request  # the command that wrote it withdraws it when it gives up

    def _young(self, key: str) -> bool:
        """Whether the file ``key`` was first seen incomplete less than ``_GRACE_S`` ago, on
        this process's own clock (the file's mtime is another machine's, maybe far off)."""
        first = self._incomplete.setdefault(key, time.monotonic())
        return time.monotonic() - first < _GRACE_S

    def _ignore(self, path: Path, key: str, kind: str, why: str) -> None:
        self._seen.add(key)
        if self._warned < WARNINGS_PER_LOOK:
            self._warned += 1
            log.warning("mindspeed-prof: ignoring capture request %s: %s", path, why)
        else:
            self._unsaid[kind] = self._unsaid.get(kind, 0) + 1

    def _acked(self, ident: str, rank: int, role: str) -> bool:
        folder = _folder(self.root, ACKS)
        return folder is not None and (folder / f"{ident}.{role}.rank{rank}.json").exists()

    # -- the command's side ---------------------------------------------------------------
    def open(self) -> None:
        """Mark that a command asks: the workers tell their steps at their next look. A job
        with profiling off has written nothing yet, so the save root may not exist: it is
        made, and removed again by ``close`` if nothing was written into it."""
        for path in (
            *reversed(self.root.parents),
            self.root,
            self.root / CONTROL,
            self.root / CONTROL / REQUESTS,
        ):
            if not os.path.lexists(path):
                path.mkdir()
                self._made.append(path)
        folder = _folder(self.root, REQUESTS)
        if folder is None:
            raise OSError(f"{self.root / CONTROL / REQUESTS} is not a folder")
        self._marker = folder / f".asking-{os.getpid()}-{time.time_ns()}"
        self._marker.touch()

    @property
    def made_root(self) -> bool:
        """Whether the save root did not exist before ``open`` (no job had written there)."""
        return self.root in self._made

    def absent(self, request: Request) -> str:
        """A save root that did not exist, and no worker looked within ``NEW_ROOT_WAIT_S``."""
        if not self.made_root or wait_for_workers(self, request, NEW_ROOT_WAIT_S):
            return ""
        return (
            f"no job looked at {self.root} within {NEW_ROOT_WAIT_S:g} s (the folder did not "
            "exist): is a job saving there running, with on_demand: true? (a job looks at a "
            "step start: with longer steps, make the folder first)"
        )

    def analyse_option(self, written: list[Ack]) -> str:
        return ""  # the captures are under the save root

    def workers(self) -> list[Worker]:
        return read_workers(self.root)

    def post(self, request: Request) -> str:
        write_request(self.root, request)
        return ""

    def status(self, request: Request) -> Status:
        acks = [
            msgspec.structs.replace(a, root=str(self.root))
            for a in read_acks(self.root, request.id)
        ]  # the save root as this machine sees it
        state = json.dumps([(a.rank, a.role, a.status) for a in acks])
        if state != self._state:
            self._state, self._changed = state, time.monotonic()
        return Status(
            acks=acks, settled=time.monotonic() - self._changed >= _SETTLE_S, workers=self.workers()
        )

    def close(self, request: Request) -> None:
        """The request withdrawn (a job started later must not take it), the mark removed."""
        folder = _folder(self.root, REQUESTS)
        if folder is not None:
            (folder / f"{request.id}.json").unlink(missing_ok=True)
        if self._marker is not None:
            self._marker.unlink(missing_ok=True)
            self._marker = None
        for path in reversed(self._made):
            try:
                path.rmdir()  # only if empty: whatever a job wrote stays
            except OSError:
                break
        self._made = []


def _token(text: str) -> str:
    """``text`` reduced to the characters a request id may hold."""
    cleaned = "".join(c if c.isalnum() or c in "_-." else "_" for c in text)
    return cleaned.lstrip("._-")[:60] or "file"
