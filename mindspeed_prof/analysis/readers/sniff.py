"""What a file is, decided from its content, whatever its name, at a bounded cost.

``decide(path)`` looks at the first bytes and then asks only what tells the kinds apart:

- SQLite (``SQLite format 3``): the table names, from the schema (opened immutable: nothing is
  written beside it; a schema still in the write-ahead log of a writer that died is not seen).
- A pickle (protocol 2 and later): its first opcodes, walked by ``pickletools`` (nothing is
  built or run): an allocator snapshot opens a dict whose first key is one of ``SNAPSHOT_KEYS``;
  any other pickle is ``PICKLE``, never read.
- JSON, plain or compressed (gzip, xz): an object's top-level keys are streamed (``jsonscan``,
  values skipped, never built) until ``traceEvents`` or a mark of another kind; an array's
  first element is looked at for ``ph`` (Chrome's JSON Array Format). The first events
  (``PEEK_EVENTS``, within ``PEEK_BYTES``) tell torch.profiler's and our own traces (a
  category of ``TORCH_CATS``, a ``ProfilerStep#``) from another tool's (``CHROME``: duration,
  counter or instant events of no such category).
- Anything else: a CSV whose header holds the columns of one of torch_npu's files.

At most ``DECIDE_BYTES`` (decompressed) are read to decide; a file not decided by then is not
recognised (``Decision.kind`` None, ``undecided`` True). The same bound is where the trace
reader refuses a document whose events have not started (``stream.MAX_PIECE``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import lzma
import re
import zlib
from pathlib import Path
from typing import NamedTuple

from mindspeed_prof.analysis.readers.jsonscan import NotJson, Scanner, TooLong
from mindspeed_prof.analysis.readers.stream import MAX_PIECE, compression, open_bytes
from mindspeed_prof.formats import MSPROF_OUTPUT

__all__ = [
    "is_msprof",
    "ANALYSIS_DB",
    "API_STATISTIC",
    "CHROME",
    "COMMUNICATION",
    "COMMUNICATION_MATRIX",
    "CSV_COLUMNS",
    "DECIDE_BYTES",
    "EXECUTION_TRACE",
    "KERNEL_DETAILS",
    "MEMORY_RECORD",
    "NOT_READ",
    "NPU_KINDS",
    "NPU_MODULE_MEM",
    "OPERATOR_DETAILS",
    "OPERATOR_MEMORY",
    "OP_STATISTIC",
    "OP_SUMMARY",
    "PEEK_BYTES",
    "PEEK_EVENTS",
    "PICKLE",
    "PROFILER_DB",
    "SNAPSHOT",
    "SNAPSHOT_KEYS",
    "STEP_TRACE_TIME",
    "TORCH_CATS",
    "TORCH_DB",
    "TRACE",
    "TRACE_LIST",
    "Decision",
    "decide",
    "kind_of",
    "unreadable",
]

#: The most bytes (decompressed) read to decide what a file is.
DECIDE_BYTES = MAX_PIECE
#: Of a pickle, the most bytes whose opcodes are looked at.
PICKLE_HEAD = 1 << 12

# Kinds. Chrome traces: an object with ``traceEvents`` (torch/Kineto, our range files), or a
# list of events (torch_npu's trace_view.json, other tools' JSON Array Format).
TRACE, TRACE_LIST = "trace", "trace_list"
#: A Chrome trace (either form) written by another tool (``readers.generic``).
CHROME = "chrome"
#: Categories torch.profiler/Kineto (both schemas) and our range files write: an event of one
#: of these among the first makes a trace theirs.
TORCH_CATS = frozenset(
    {
        "cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
        "cuda_sync", "python_function", "user_annotation", "gpu_user_annotation", "ac2g",
        "async_cpu_to_gpu", "async", "async_gpu", "cpu_instant_event", "fwdbwd", "Trace",
        "overhead", "mtia_runtime", "mtia_ccp_events", "cuda_profiler_range", "Operator",
        "Kernel", "Runtime", "Memcpy", "Memset", "stage", "step", "range", "mark", "count",
        "iteration",
    }
)  # fmt: skip
#: Of a trace, the most events and bytes looked at to tell whose it is.
PEEK_EVENTS, PEEK_BYTES = 256, 4 << 20
_THEIRS_PH = frozenset({"X", "B", "E", "C", "i", "I", "b", "e", "n"})
TORCH_DB = "torch_db"  # our ``*.pt.trace.db``
SNAPSHOT = "snapshot"  # an allocator snapshot, ``torch.cuda.memory._snapshot()`` pickled
PICKLE = "pickle"  # any other pickle: not read
EXECUTION_TRACE = "execution_trace"  # PyTorch's execution trace (``nodes``): not read
# torch_npu's output files, each named for the file torch_npu writes.
KERNEL_DETAILS, OP_SUMMARY, STEP_TRACE_TIME = "kernel_details", "op_summary", "step_trace_time"
OP_STATISTIC, API_STATISTIC = "op_statistic", "api_statistic"
MEMORY_RECORD, OPERATOR_MEMORY, NPU_MODULE_MEM = (
    "memory_record",
    "operator_memory",
    "npu_module_mem",
)
OPERATOR_DETAILS = "operator_details"  # recognised, not read
COMMUNICATION, COMMUNICATION_MATRIX = "communication", "communication_matrix"
PROFILER_DB, ANALYSIS_DB = "profiler_db", "analysis_db"

#: torch_npu's CSVs by the header columns that tell each apart (the first match wins).
CSV_COLUMNS: dict[str, tuple[str, ...]] = {
    KERNEL_DETAILS: ("Name", "Type", "Start Time(us)", "Duration(us)"),
    OP_SUMMARY: ("Op Name", "OP Type", "Task Start Time(us)", "Task Duration(us)"),
    STEP_TRACE_TIME: ("Step", "Computing", "Communication(Not Overlapped)", "Free"),
    OP_STATISTIC: ("OP Type", "Count", "Total Time(us)"),
    API_STATISTIC: ("API Name", "Count", "Time(us)"),
    MEMORY_RECORD: ("Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)"),
    OPERATOR_MEMORY: ("Name", "Size(KB)", "Allocation Time(us)"),
    NPU_MODULE_MEM: ("Component", "Timestamp(us)", "Total Reserved(MB)"),
    OPERATOR_DETAILS: ("Name", "Host Self Duration(us)", "Device Self Duration(us)"),
}
#: Kinds recognised and not read, and how a line naming one says what it is.
NOT_READ = {
    OPERATOR_DETAILS: "torch_npu's operator_details.csv",
    EXECUTION_TRACE: "a PyTorch execution trace",
    PICKLE: "a pickle that is not an allocator snapshot (nothing in it was loaded)",
}
#: Every kind of torch_npu's output files that the torch_npu readers read.
NPU_KINDS = frozenset(
    {*CSV_COLUMNS, COMMUNICATION, COMMUNICATION_MATRIX, PROFILER_DB, ANALYSIS_DB}
) - set(NOT_READ)
#: The keys ``torch.cuda.memory._snapshot()`` (and torch_npu's) puts first.
SNAPSHOT_KEYS = frozenset(
    {"segments", "device_traces", "allocator_settings", "external_annotations"}
)
#: A key of communication.json's operators, and of communication_matrix.json's links.
_COMM_MARKS = {
    "Communication Time Info": COMMUNICATION,
    "Communication Bandwidth Info": COMMUNICATION,
    "Transport Type": COMMUNICATION_MATRIX,
}
_STEP_KEY = re.compile(r"^step\d*$")
#: Top-level keys only torch.profiler and our range files write before their events.
_TORCH_KEYS = frozenset({"schemaVersion", "deviceProperties", "distributedInfo", "mindspeed_prof"})
_SQLITE = b"SQLite format 3\x00"
_ANALYSIS_TABLES = frozenset(
    {"StepTraceTime", "CommAnalyzerTime", "CommAnalyzerBandwidth", "CommAnalyzerMatrix"}
)
_STRINGS = ("UNICODE", "STRING")  # pickle opcodes that push a str (SHORT_BINUNICODE, ...)
_SKIP_OPS = frozenset({"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"})


class Decision(NamedTuple):
    """A file's kind (None: not one recognised), the bytes read (decompressed) to decide, and
    whether it was left undecided at ``DECIDE_BYTES``."""

    kind: str | None
    read: int = 0
    undecided: bool = False


def unreadable() -> tuple[type[Exception], ...]:
    """What reading a file that is not what it seems raises (a decode error is a
    ``ValueError``). Called in an ``except`` clause, so only once one is raised: sqlite3 is
    imported by the readers of a db, not at every start."""
    import sqlite3

    return (OSError, EOFError, zlib.error, lzma.LZMAError, sqlite3.Error, ValueError)


def kind_of(path: Path) -> str | None:
    """``decide(path).kind``."""
    return decide(path).kind


def decide(path: Path) -> Decision:
    """What ``path`` is, from its content; never raises for a file it cannot read."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE))
        if head.startswith(_SQLITE):
            return Decision(_db_kind(path), len(head))
        if head[:1] == b"\x80" and head[1:2] and 2 <= head[1] <= 5:
            return _pickle_kind(path)
        return _text_kind(path)
    except unreadable():
        return Decision(None)


def _text_kind(path: Path) -> Decision:
    compressed = compression(path) is not None
    with open_bytes(path) as f:
        scan = Scanner(f, DECIDE_BYTES)
        try:
            first = scan.peek()
            if first == ord("{"):
                return Decision(_object_kind(scan), scan.taken)
            if first == ord("["):
                return Decision(_array_kind(scan), scan.taken)
            if first is None or compressed:
                return Decision(None, scan.taken)
            return Decision(_csv_kind(scan.head()), scan.taken)
        except NotJson:
            return Decision(None, scan.taken)
        except TooLong:
            return Decision(None, scan.taken, undecided=True)


def _object_kind(scan: Scanner) -> str | None:
    """A trace when a top-level key ``traceEvents`` holds an array; torch_npu's communication
    files by the keys inside their first step; PyTorch's execution trace by ``schema`` and then
    ``nodes``."""
    seen: set[str] = set()
    for key in scan.each_key():
        if key == "traceEvents":
            if scan.peek() != ord("["):
                return None
            return TRACE if seen & _TORCH_KEYS else _events_kind(scan, TRACE)
        if key == "nodes" and "schema" in seen:
            return EXECUTION_TRACE
        seen.add(key)
        if _STEP_KEY.match(key) and scan.peek() == ord("{"):
            mark = _mark(scan, 3)
            if mark is not None:
                return _COMM_MARKS[mark]
        else:
            scan.skip()
    return None


def _mark(scan: Scanner, depth: int) -> str | None:
    """The first key of ``_COMM_MARKS`` in the object that comes next, looking ``depth``
    objects down; None (the object consumed) when there is none."""
    for key in scan.each_key():
        if key in _COMM_MARKS:
            return key
        if depth > 0 and scan.peek() == ord("{"):
            found = _mark(scan, depth - 1)
            if found is not None:
                return found
        else:
            scan.skip()
    return None


def _array_kind(scan: Scanner) -> str | None:
    """A list of events: the first element is an object with a ``ph`` (phase) key; then whose
    (``_events_kind``)."""
    return _events_kind(scan, TRACE_LIST, first_has_ph=True)


def _events_kind(scan: Scanner, torch: str, first_has_ph: bool = False) -> str | None:
    """The array of events that comes next (at most ``PEEK_EVENTS`` of them, ``PEEK_BYTES``):
    ``torch`` (``TRACE`` or ``TRACE_LIST``) when one is torch's or ours (a category of
    ``TORCH_CATS``, a ``ProfilerStep#`` name) or none says, ``CHROME`` when only another
    tool's events (duration, counter or instant events of other categories) come first.
    ``first_has_ph``: None unless the first element is an object with a ``ph`` key (a read
    error before that is the caller's)."""
    theirs = judged = False
    start = scan.taken
    try:
        for n, _ in enumerate(scan.each_element()):
            fields = _fields(scan)
            if n == 0 and first_has_ph and (fields is None or fields[0] is None):
                return None
            judged = True
            if fields is None:
                return torch
            ph, cat, name = fields
            if cat in TORCH_CATS or name.startswith("ProfilerStep#"):
                return torch
            theirs = theirs or ph in _THEIRS_PH
            if n + 1 >= PEEK_EVENTS or scan.taken - start > PEEK_BYTES:
                break
    except (NotJson, TooLong):
        if first_has_ph and not judged:
            raise
    if first_has_ph and not judged:
        return None  # an empty list: no event says it is a trace
    return CHROME if theirs else torch


def _fields(scan: Scanner) -> tuple[str | None, str, str] | None:
    """An event's ``ph`` (None: no such key), ``cat`` and ``name`` ("" where absent or not a
    string); None when the element is not an object."""
    if scan.peek() != ord("{"):
        return None
    found: dict[str, str | None] = {"ph": None, "cat": "", "name": ""}
    for key in scan.each_key():
        if key in found and scan.peek() == ord('"'):
            found[key] = scan.key()
        else:
            if key == "ph":
                found["ph"] = ""
            scan.skip()
    return found["ph"], found["cat"] or "", found["name"] or ""


def _csv_kind(head: bytes) -> str | None:
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return None  # no whole header line in the first chunk
    try:
        header = next(csv.reader([line.decode("utf-8-sig")]), [])
    except (UnicodeDecodeError, csv.Error):
        return None
    columns = {c.strip() for c in header}
    return next((kind for kind, needed in CSV_COLUMNS.items() if columns.issuperset(needed)), None)


def _db_kind(path: Path) -> str | None:
    from mindspeed_prof.formats.sqlite_read import connect

    # nothing made beside a db in WAL mode (torch_npu's): formats.sqlite_read
    with contextlib.closing(connect(path)) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if {"meta", "strings", "events"} <= tables:
        return TORCH_DB
    if "STRING_IDS" in tables and tables & {"TASK", "PYTORCH_API"}:
        return PROFILER_DB
    if tables & _ANALYSIS_TABLES:
        return ANALYSIS_DB
    return None


def _pickle_kind(path: Path) -> Decision:
    """A snapshot opens a dict (``EMPTY_DICT``, then ``MARK`` when it has several items) whose
    first key is a string of ``SNAPSHOT_KEYS``; memo and framing opcodes aside."""
    with open(path, "rb") as f:
        head = f.read(PICKLE_HEAD)
    ops: list[tuple[str, object]] = []
    try:
        import pickletools  # only for a file that starts as a pickle

        for op, arg, _ in pickletools.genops(io.BytesIO(head)):
            if op.name not in _SKIP_OPS:
                ops.append((op.name, arg))
            if len(ops) == 3:
                break
    except (ValueError, EOFError, UnicodeDecodeError):
        pass  # cut at PICKLE_HEAD, or not a pickle: judged on the opcodes read
    names = [name for name, _ in ops]
    if names[:1] == ["EMPTY_DICT"]:
        key = (
            ops[2] if names[1:2] == ["MARK"] and len(ops) > 2 else ops[1] if len(ops) > 1 else None
        )
        if key is not None and any(s in key[0] for s in _STRINGS) and key[1] in SNAPSHOT_KEYS:
            return Decision(SNAPSHOT, len(head))
    return Decision(PICKLE, len(head))


def is_msprof(folder: Path) -> bool:
    """Whether ``folder`` is a CANN msprof export: it holds ``mindstudio_profiler_output``."""
    return (folder / MSPROF_OUTPUT).is_dir()
