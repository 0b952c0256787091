"""Manifests: what a job instance profiled, with which config and versions, and what it wrote.

One file per job instance and rank, named by its run id (``manifest-<run>.json`` for rank 0,
``manifest-<run>.rank<r>.json`` for the others), so a restart, a second run or a concurrent job
in the same save root writes a manifest of its own. Manifests from before run ids
(``manifest.json``, ``manifest.rank<r>.json``, ``manifest.job<n>[.rank<r>].json``) are read
the same way; their ``run`` is empty.

``Manifest`` is the one typed form, its parts structs too (``Job``, ``formats.record``'s
``CaptureRecord`` and ``FileEntry``, ``formats.anomaly``'s ``Anomaly``): ``write_manifest``
writes it, ``read_manifest``, ``find_manifests`` and ``newest_job`` read it back (a field is one
line in its struct).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from mindspeed_prof.formats import CLUSTER_SUMMARY, NPU_FOLDER, capture_stem, is_capture_file
from mindspeed_prof.formats.anomaly import Anomaly
from mindspeed_prof.formats.cluster import WorkerSummary, read_cluster_summary
from mindspeed_prof.formats.record import CaptureRecord, FileEntry, field_line
from mindspeed_prof.jsonio import Refused, read_bytes

__all__ = [
    "MAX_MANIFEST_BYTES",
    "Job",
    "Manifest",
    "Window",
    "capture_count",
    "find_manifests",
    "host_info",
    "is_manifest",
    "job_files",
    "manifest_name",
    "newest_job",
    "nothing_captured",
    "read_manifest",
    "versions",
    "write_manifest",
]

#: A manifest larger than this is not read (one that lists a large root's files is a few MB).
MAX_MANIFEST_BYTES = 64 * 2**20
_NAME = re.compile(r"^manifest(-[A-Za-z0-9][A-Za-z0-9_.-]*?)?(\.job\d+)?(\.rank\d+)?\.json$")


class Job(msgspec.Struct, kw_only=True):
    """Hydra's job, as the manifest records it (every field written)."""

    name: str | None = None
    #: The job's number in a multirun (None: a single run).
    num: int | None = None
    overrides: list[str] = []
    output_dir: str | None = None
    #: The ranks ``doctor`` expects of ``profile_ranks`` (absent before it was recorded).
    world_size: int | None = None
    #: The command that relaunches the job, and its launch dir (``hydra.launch``).
    command: list[str] = []
    cwd: str = ""


class Window(msgspec.Struct, kw_only=True):
    """What the readers read of the job's ``integrated`` section: the capture window."""

    profile: bool = False
    #: One stage's name or a list of them (None: not recorded).
    stage: str | list[str] | None = None
    profile_step_start: int | None = None
    profile_step_end: int | None = None
    profile_ranks: str | list[int] = "all"


class Manifest(msgspec.Struct, kw_only=True):
    """One job instance's record on one rank, as written while it runs and when it ends."""

    #: running | completed | failed | exited
    status: str = "running"
    #: The job instance's run id (``formats.run``); "" in manifests from before run ids.
    run: str = ""
    #: How the ranks agreed on it (``capture.run``: given, env, torchrun, process group...).
    run_how: str = ""
    job: Job = msgspec.field(default_factory=Job)
    rank: int | None = None
    host: str = ""
    pid: int | None = None
    start_time: float | None = None
    versions: dict[str, str | None] = {}
    #: The job's checked settings, and the role sections as composed (``config.schema``).
    profiler_config: dict[str, dict[str, Any]] = {}
    profiler_failed: bool = False
    # -- known when the job ends (None, and not written, before) ---------------------------
    end_time: float | None = None
    duration_s: float | None = None
    #: Each capture's record: its own files, exactly.
    captures: list[CaptureRecord] | None = None
    #: Anomalies seen: rank, step, stage, time, median...
    triggers: list[Anomaly] | None = None
    #: Files this job wrote under the save root, manifests excluded.
    files: list[FileEntry] | None = None
    #: The task's exception, one line.
    error: str | None = None

    @property
    def window(self) -> Window:
        """The ``integrated`` section's window (a field of the wrong type: its default)."""
        return _window(self.profiler_config.get("integrated") or {})


#: The manifest's lists where one entry of the wrong shape costs only itself (named in one
#: line): where (``job.overrides``: ``job``'s ``overrides``) and each entry's type.
_LISTS: dict[str, type] = {
    "captures": CaptureRecord,
    "triggers": Anomaly,
    "files": FileEntry,
    "job.overrides": str,
}


def _window(section: dict[str, Any]) -> Window:
    try:
        return msgspec.convert(section, Window)
    except msgspec.ValidationError:
        pass
    kept = {}
    for key, value in section.items():
        try:
            msgspec.convert({key: value}, Window)
        except msgspec.ValidationError:
            continue
        kept[key] = value
    return msgspec.convert(kept, Window)


def manifest_name(run: str, rank: int) -> str:
    """``manifest-<run>.json`` for rank 0, ``manifest-<run>.rank<r>.json`` for other ranks."""
    return f"manifest-{run}{f'.rank{rank}' if rank else ''}.json"


def is_manifest(name: str) -> bool:
    """Whether ``name`` is a manifest's, of this version or an earlier one."""
    return bool(_NAME.match(name))


def write_manifest(path: Path, manifest: Manifest) -> None:
    """Write ``manifest`` at ``path`` atomically (readers see the old file or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    doc = {k: v for k, v in msgspec.to_builtins(manifest).items() if v is not None}
    try:
        tmp.write_bytes(msgspec.json.format(msgspec.json.encode(doc), indent=2))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_manifest(path: Path, refused: Callable[[Refused], None] | None = None) -> Manifest | None:
    """The manifest at ``path``; None when it is not a regular file under
    ``MAX_MANIFEST_BYTES`` holding a JSON object of the manifest's fields (``jsonio``'s
    bounded read). Keys this version does not know are ignored, missing ones defaulted; an
    entry of ``captures``, ``triggers`` or ``files`` of the wrong shape is left out.
    ``refused`` is told, in one line naming the file and the field, of a file not read (a
    link, a FIFO, too large, a field of the wrong type) and of the entries left out."""
    try:
        doc = msgspec.json.decode(read_bytes(path, MAX_MANIFEST_BYTES))
    except Refused as err:
        if refused is not None:
            refused(err)
        return None
    except OSError:
        return None
    except msgspec.DecodeError:
        if refused is not None:
            refused(Refused(path, "not a manifest: not JSON"))
        return None
    if not isinstance(doc, dict):
        if refused is not None:
            refused(Refused(path, "not a manifest: not a JSON object"))
        return None
    left_out = _entries(doc)
    try:
        manifest = msgspec.convert(doc, Manifest)
    except msgspec.ValidationError as err:
        if refused is not None:
            refused(Refused(path, f"not a manifest: {field_line(err)}"))
        return None
    if left_out and refused is not None:
        refused(Refused(path, f"its {', '.join(left_out)} of the wrong shape; the rest read"))
    return manifest


def _entries(doc: dict[str, Any]) -> list[str]:
    """Take the entries of the manifest's lists that are of the wrong shape out of ``doc``;
    their names (``captures[2]``), at most five and how many more."""
    bad: list[str] = []
    for key, cls in _LISTS.items():
        parent, _, name = key.rpartition(".")
        holder = doc.get(parent) if parent else doc
        value = holder.get(name) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or not isinstance(value, list):
            continue
        kept = []
        for i, entry in enumerate(value):
            try:
                msgspec.convert(entry, cls)
            except msgspec.ValidationError:
                bad.append(f"{key}[{i}]")
            else:
                kept.append(entry)
        holder[name] = kept
    return bad[:5] + ([f"{len(bad) - 5} more"] if len(bad) > 5 else [])


def find_manifests(
    root: Path, recursive: bool = True, refused: Callable[[Refused], None] | None = None
) -> list[tuple[Path, Manifest]]:
    """Every manifest that can be read under ``root`` (in its folders too when
    ``recursive``), with its path, in path order; ``refused`` is told of each not read."""
    if not root.is_dir():
        return []
    paths = root.rglob("manifest*.json") if recursive else root.glob("manifest*.json")
    found = [(p, read_manifest(p, refused)) for p in sorted(paths) if is_manifest(p.name)]
    return [(p, m) for p, m in found if m is not None]


def newest_job(root: Path) -> Manifest | None:
    """The manifest of the newest job that wrote into ``root`` (or the folder above it: a
    stage's or role's folder was given), by its start; None where there is none."""
    for folder in (root, root.parent):
        found = find_manifests(folder, recursive=False)
        if found:
            return max(found, key=lambda pm: pm[1].start_time or 0.0)[1]
    return None


def versions() -> dict[str, str | None]:
    """Installed versions, read from package metadata (nothing is imported)."""
    from importlib import metadata  # email and csv with it: only where a capture is written

    out: dict[str, str | None] = {}
    for dist in ("mindspeed-prof", "torch", "torch_npu", "hydra-core", "omegaconf", "ray"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


class HostInfo(TypedDict):
    host: str
    pid: int


def host_info() -> HostInfo:
    import socket  # where a capture is written, not where one is read

    return {"host": socket.gethostname(), "pid": os.getpid()}


def job_files(root: Path, captures: list[CaptureRecord], run: str = "") -> list[FileEntry]:
    """What the job wrote under ``root``, relative path and size, without walking ``root``:
    the files of its ``captures`` (manifest records; a folder: the files in it), and those its
    Ray workers reported in ``root``'s cluster summary for ``run``. A file that is gone (its
    folder deleted) is listed nowhere: it is taken out of its capture's ``files`` too, and a
    capture whose files are all gone out of ``captures``."""
    out: dict[str, int] = {}
    root = root.expanduser().absolute()
    kept = []
    for capture in captures:
        if capture.files:
            capture.files = [f for f in capture.files if _add(root, Path(f), out)]
            if not capture.files:
                continue
        kept.append(capture)
    captures[:] = kept
    for f in _workers_files(root, run):
        _add(root, Path(f), out)
    return [FileEntry(path, size) for path, size in sorted(out.items())]


def _add(root: Path, path: Path, out: dict[str, int]) -> bool:
    """``path``'s files (a folder: those in it) into ``out`` where under ``root``; whether
    it is still there."""
    path = root / path  # relative: under the root; absolute: as it is
    try:
        st = path.stat()
    except OSError:
        return False
    found = [(path, st)] if stat.S_ISREG(st.st_mode) else []
    if stat.S_ISDIR(st.st_mode):
        for p in path.rglob("*"):
            try:
                found.append((p, p.stat()))
            except OSError:
                continue
    for p, s in found:
        if stat.S_ISREG(s.st_mode) and p.is_relative_to(root):
            out[str(p.relative_to(root))] = s.st_size
    return True


def _workers_files(root: Path, run: str) -> list[str]:
    """The files ``root``'s cluster summary says this run's Ray workers wrote (none where
    there is none, or it cannot be read; an odd entry costs only itself)."""
    summary = read_cluster_summary(root / CLUSTER_SUMMARY) if run else None
    workers = summary.workers if summary is not None else []
    return [
        f.path for w in workers if isinstance(w, WorkerSummary) and w.run == run for f in w.files
    ]


def capture_count(manifest: Manifest, shared: bool = False) -> int:
    """A job's captures: its own profiler's, or, in a save root of its own, every capture there
    (Ray workers write theirs beside the driver's). One capture may be several files."""
    own = len(manifest.captures or [])
    if shared:  # the root's files belong to several jobs
        return own
    stems = set()
    for f in manifest.files or []:
        path = Path(f.path)
        npu = [i for i, part in enumerate(path.parts) if part.endswith(NPU_FOLDER)]
        if npu:
            stems.add(Path(*path.parts[: npu[0] + 1]))
        elif is_capture_file(path.name):
            stems.add(path.parent / capture_stem(path))
    return max(own, len(stems))


def nothing_captured(manifest: Manifest, shared: bool = False) -> str | None:
    """Why a finished job captured nothing (its chosen stage never ran...); None if it did."""
    if manifest.profiler_failed:
        return "profiling failed in this job (its log names the cause)"
    if capture_count(manifest, shared) or manifest.status == "running":
        return None
    cfg = manifest.window
    if not cfg.profile:
        return "profiling was off (profile: false)"
    ranks = cfg.profile_ranks
    if isinstance(ranks, list) and manifest.rank not in ranks:
        return f"no rank of profile_ranks {ranks} wrote a capture here"
    start, end = cfg.profile_step_start, cfg.profile_step_end
    if start is not None and end is not None:
        window = f"step {start}" if end - start == 1 else f"steps {start} to {end - 1}"
    else:
        window = "the profiled steps"
    stage = "all" if cfg.stage is None else cfg.stage
    if isinstance(stage, list):
        return f"stages {', '.join(map(str, stage))} never ran in this job ({window})"
    if stage != "all":
        return f"stage {stage} never ran in this job ({window})"
    return (
        f"{window} never ran in this job"
        if window.startswith("step ")
        else (f"none of {window} ran in this job")
    )
