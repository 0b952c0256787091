"""The capture header: what every capture file records about its capture, under the key
``"mindspeed_prof"`` (range files and flight dumps, Kineto traces, rollout engines' traces,
torch_npu's ``profiler_metadata.json``).

``CaptureHeader`` is its one typed form: the profiler builds it (``Profiler.metadata``), the
writers store it (``header_dict``), the readers decode it (``read_header``). A field absent
from a file is None; keys this version does not know are ignored; a value of the wrong type
costs only that key, with one problem line naming the file.
"""

from __future__ import annotations

from typing import Literal, TypeVar

import msgspec

__all__ = [
    "HEADER_NOTE",
    "KIND_SPANS",
    "CaptureHeader",
    "Clock",
    "ModelFacts",
    "header_dict",
    "header_json",
    "merged",
    "read_header",
]

#: ``kind`` of a range file (the span recorder's, a flight dump).
KIND_SPANS = "spans"


class ModelFacts(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The model facts for MFU (``model_flops_per_token``, ``peak_tflops``; 0: not given)."""

    flops_per_token: float | None = None
    peak_tflops: float | None = None


class Clock(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The (wall clock, trace clock) pair at a range file's start, in ns."""

    wall_ns: int | float | None = None
    trace_ns: int | float | None = None


class CaptureHeader(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One capture's header, fields in the order they are written."""

    #: ``spans`` for a range file; absent in a Kineto trace.
    kind: str | None = None
    #: The range file's format version (``capture.trace_file.FORMAT``).
    format: int | None = None
    #: The job instance's run id (``formats.run``).
    run: str | None = None
    rank: int | None = None
    role: str | None = None
    stage: str | None = None
    step: int | None = None
    host: str | None = None
    pid: int | None = None
    #: The profile level (``level0``...).
    level: str | None = None
    #: The capture window's first and last step (None: open).
    window: list[int | None] | None = None
    warmup_steps: int | None = None
    #: The user's pattern of communication kernels (``readers.classify``).
    comm_kernels: str | None = None
    model: ModelFacts | None = None
    #: What started a triggered capture (an anomaly's kind, ``flight``...).
    trigger: str | None = None
    #: A rollout engine's trace: the engine (vllm, sglang...) and the iterations it ran.
    engine: str | None = None
    iterations: list[int] | None = None
    #: A flight dump: why it was written, the steps it holds, the step that asked for it.
    reason: str | None = None
    steps: list[int | None] | None = None
    trigger_step: int | None = None
    clock: Clock | None = None
    # -- filled by the readers from the rest of the file; never written here -----------------
    #: Kineto's wall-clock ns at ts 0 (``baseTimeNanoseconds``).
    base_time_ns: int | None = None
    #: One device's memory (Kineto's ``deviceProperties``).
    device_memory_bytes: int | None = None
    #: The name every device shares (Kineto's ``deviceProperties``), for MFU's peak.
    device_name: str | None = None
    #: The job's world size (Kineto's ``distributedInfo``, MindSpeed's ``distributed_args``).
    world_size: int | None = None
    #: Device events of kinds not read as device time, per category.
    unread_device: dict[str, int] | None = None
    #: How a torch_npu capture was exported: ``db`` or ``text``.
    export: Literal["db", "text"] | None = None


def header_dict(header: CaptureHeader) -> dict[str, object]:
    """``header`` as the JSON object written on disk (absent fields left out)."""
    out = msgspec.to_builtins(header)
    assert isinstance(out, dict)
    return out


def header_json(header: CaptureHeader) -> str:
    return msgspec.json.encode(header).decode()


def read_header(raw: object, where: object) -> tuple[CaptureHeader, str | None]:
    """The header decoded from ``raw`` (a file's ``mindspeed_prof`` value; None: it has none)
    and a problem line naming ``where`` when some of it was of the wrong type (those keys
    dropped, the rest kept)."""
    if raw is None:
        return CaptureHeader(), None
    if not isinstance(raw, dict):
        return CaptureHeader(), f"{where}: its mindspeed_prof header is not an object; ignored"
    bad: list[str] = []
    header = _lenient(raw, CaptureHeader, bad)
    invalid = _invalid(header)
    if not bad and not invalid:
        return header, None
    said = [f"{', '.join(sorted(bad))} of the wrong type"] if bad else []
    return header, f"{where}: {HEADER_NOTE} has {'; '.join(said + invalid)}; ignored"


#: What every problem line about a header says after the file's name.
HEADER_NOTE = "its mindspeed_prof header"


#: Bounds on a header's numbers, as config bounds them (a rank of 10**12 is no rank).
MAX_RANK, MAX_STEP, MAX_PID = 1 << 20, 1 << 53, 1 << 32
#: The longest text a header's name fields (role, stage, host...) may hold, and a pattern.
MAX_NAME, MAX_PATTERN = 128, 1024
_NAMES = ("role", "stage", "host", "level", "trigger", "engine", "reason", "kind")
_INTS = {"rank": MAX_RANK, "step": MAX_STEP, "trigger_step": MAX_STEP, "warmup_steps": MAX_STEP}


def _invalid(header: CaptureHeader) -> list[str]:
    """What of ``header`` is of the right type but out of bounds, validated as config is (a run
    id of 1-64 ``[A-Za-z0-9_.-]``, ranks and steps >= 0, names short and printable): each such
    field is dropped from ``header`` (None) and named, with why, in the list returned."""
    from mindspeed_prof.formats.run import valid_run_id  # formats.run imports nothing of ours

    out: list[str] = []

    def drop(name: str, why: str) -> None:
        setattr(header, name, None)
        out.append(f"{name} {why}")

    if header.run is not None and not valid_run_id(header.run):
        drop("run", f"that is no run id ({_shown(header.run)}: 1-64 of A-Z a-z 0-9 _ . -)")
    for name, top in _INTS.items():
        value = getattr(header, name)
        if value is not None and not 0 <= value < top:
            drop(name, f"out of range ({_shown(str(value))}: 0 to {top - 1})")
    if header.pid is not None and not 0 < header.pid < MAX_PID:
        drop("pid", f"out of range ({_shown(str(header.pid))})")
    for name in _NAMES:
        value = getattr(header, name)
        if value is not None and not (0 < len(value) <= MAX_NAME and value.isprintable()):
            drop(name, f"that is no name ({_shown(value)}: 1-{MAX_NAME} printable characters)")
    if header.comm_kernels is not None and len(header.comm_kernels) > MAX_PATTERN:
        drop("comm_kernels", f"longer than {MAX_PATTERN} characters")
    return out


def _shown(text: str) -> str:
    """``text`` short and on one line: its first 20 characters, and its length if longer."""
    head = ascii(text[:20])
    return head if len(text) <= 20 else f"{head}... {len(text):,} characters"


_S = TypeVar("_S", bound=msgspec.Struct)
#: The fields that are structs themselves, read key by key as their parent is.
_NESTED: dict[str, type[msgspec.Struct]] = {"model": ModelFacts, "clock": Clock}


def _lenient(raw: dict[object, object], cls: type[_S], bad: list[str], prefix: str = "") -> _S:
    """``raw`` as ``cls``, less the keys whose values are of the wrong type (named in ``bad``)."""
    try:
        return msgspec.convert(raw, cls)
    except msgspec.ValidationError:
        pass
    kept: dict[object, object] = {}
    for key, value in raw.items():
        try:
            msgspec.convert({key: value}, cls)
        except msgspec.ValidationError:
            nested = _NESTED.get(str(key)) if not prefix else None
            if nested is not None and isinstance(value, dict):
                kept[key] = msgspec.to_builtins(_lenient(value, nested, bad, f"{key}."))
            else:
                bad.append(f"{prefix}{str(key)[:40]}")
        else:
            kept[key] = value
    return msgspec.convert(kept, cls)


def merged(under: CaptureHeader, over: CaptureHeader) -> CaptureHeader:
    """``over``'s fields where set, else ``under``'s."""
    given = {name: getattr(over, name) for name in over.__struct_fields__}
    return msgspec.structs.replace(under, **{k: v for k, v in given.items() if v is not None})
