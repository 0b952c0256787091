"""Issue 30, section 4: variants of every corpus set that nobody wrote by hand (``variants.py``)
give their original's answer, or its exactly transformed one, and keep the invariants.

- ``test_variant``: one part at a time, each on the sets it applies to (names, folders and
  compression on every set; the parts that rewrite a trace on the small sets), ``analyse
  --json`` against the original's, normalised (``variants.normalise``);
- ``test_variant_by_file``: a metadata object first and the list form, passed by file name;
- ``test_split_boundary``: what a split changes by design, apart;
- ``test_variant_commands``: doctor, timeline, the text and ``compare`` of the original
  against the variant, on a variant of the parts that keep the ranks, on the small sets;
- ``test_combinations``: hypothesis draws a set, a combination of parts and their
  parameters; the same answer again.

A (set, part) pair that fails on main is a strict xfail naming why (``KNOWN``).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS, SETS, unpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import (
    check_compare_self,
    check_doctor,
    check_text,
    check_timeline,
    decode,
)
from invariants_run import Answer, answer, cli, known, original
from test_invariants import KNOWN as KNOWN_ON_MAIN
from test_invariants import READ, SMALL, packed_bytes
from variants import Recipe, Variant, make, traces_of
from variants_answer import boundary, normalise, same, tops, without_top_level
from variants_trace import steps_of, trace_rank

#: One part each. ``rename``, ``nest`` and ``compress`` only rename and re-pack: every set.
PARTS: dict[str, Recipe] = {
    "reorder": Recipe(seed=1, reorder=1),
    "metadata_30k": Recipe(seed=2, metadata=30_000),
    "metadata_1m": Recipe(seed=3, metadata=1_100_000),
    "list_form": Recipe(seed=4, list_form=True),
    "compress": Recipe(seed=5, compress=True),
    "rename": Recipe(seed=6, rename=True),
    "nest": Recipe(seed=7, nest=3),
    "split": Recipe(seed=8, split=True),
    "shift": Recipe(seed=9, shift_us=1e15),
    "fraction": Recipe(seed=10, fraction_ns=0.9),
    "ranks": Recipe(seed=11, ranks=True),
}
EVERY_SET = ("compress", "rename", "nest")
#: torch_npu folders: their JSON files reordered, renamed, nested (``variants`` says why).
NPU_PARTS = ("reorder", "rename", "nest")
#: Parts discovery cannot see in a folder yet (a trace found by its first 16 KiB).
UNSEEN = ("metadata_30k", "metadata_1m", "list_form")


def kind(name: str) -> str:
    """``npu`` for the folders of torch_npu and msprof (their names are fixed), else ``kineto``."""
    return "npu" if SETS[name]["kind"].startswith(("npu", "msprof")) else "kineto"


@functools.cache
def traces_in(name: str) -> list[tuple[str, int, int | None]]:
    """Each trace of a kineto set: its file name, its ProfilerStep ranges, its rank."""
    return [
        (p.name.removesuffix(".xz"), len(steps_of(doc)), trace_rank(doc, p.name)[0])
        for p, doc in traces_of(CORPUS / SETS[name]["path"])
    ]


def by_name(name: str) -> bool:
    """Whether discovery takes every trace of the set by its name (``*.pt.trace.json[.gz]``)
    rather than by its first 16 KiB."""
    return all(n.endswith((".pt.trace.json", ".pt.trace.json.gz")) for n, _, _ in traces_in(name))


#: A split rewrites one trace of a set: the sets up to this size packed, each trace alone at
#: its rank (two captures of one rank that claim no step in common are one rank's steps, but
#: each half of a cut holds work outside every step, which both then claim).
SPLIT_BYTES = 1_500_000
SPLIT = [
    n
    for n in READ
    if kind(n) == "kineto"
    and packed_bytes(n) <= SPLIT_BYTES
    and max((s for _, s, _ in traces_in(n)), default=0) >= 2
    and len({r for _, _, r in traces_in(n)}) == len(traces_in(n))
]


def applies(name: str, part: str) -> bool:
    if kind(name) == "npu":
        return part in NPU_PARTS and (part != "reorder" or name in SMALL)
    if part == "split":
        return name in SPLIT
    return part in EVERY_SET or name in SMALL


UNOWNED = "a known limit of reading a split trace a file at a time (docs/invariants.md)"
KNOWN: dict[tuple[str, str], tuple[str, str]] = {
    ("kineto_rocm_mi300x_rccl_rank0_of_8", "split"): (
        UNOWNED,
        "each half holds device work launched outside every step: both claim rank "
        "0's 'outside' row, so the halves are two captures of rank 0 reported apart (a "
        "source on every row of rank 0, a 'claimed by 2 captures' warning), not one rank's "
        "steps",
    ),
    # a step's device window ends at the next step's first op, which the other half holds
    **{
        (n, "boundary"): (
            UNOWNED,
            "a trace cut at a step is read a file at a time: the step "
            "before the cut ends at its own last op (not the next step's "
            "first), and ops it launched that ran past the cut are its own "
            "again",
        )
        for n in SPLIT
        if n != "kineto_rocm_mi250"
    },
}


# -- the originals, and a variant's answer against its original's --------------------------------


@pytest.fixture(scope="session")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``sources(name)``: the set unpacked, pristine (no cache files), once per session."""
    root = tmp_path_factory.mktemp("sources")

    @functools.cache
    def unpacked(name: str) -> Path:
        return unpack(name, root / name)

    return unpacked


@pytest.fixture(scope="session")
def originals() -> Any:
    """``originals(name)``: where the set lies and its ``analyse --json`` (shared with
    ``test_invariants``: ``invariants_run.original``)."""
    return original


@pytest.fixture(scope="session")
def made(tmp_path_factory: pytest.TempPathFactory, sources: Any) -> Any:
    """``made(name, recipe)``: the variant and its answer, once per session (the tests that
    read the same variant twice: a split, and the commands on one variant)."""
    root = tmp_path_factory.mktemp("made")

    @functools.cache
    def write(name: str, recipe: Recipe) -> tuple[Variant, Answer]:
        variant = make(sources(name), root / f"{name}-{len(list(root.iterdir()))}", recipe)
        return variant, answer(variant.root)

    return write


def check_answer(
    name: str,
    variant: Variant,
    got: Answer,
    want: Answer,
    want_root: Path,
    base: Variant | None = None,
) -> None:
    """The variant's answer is the original's, normalised; every invariant the original
    keeps holds on it too."""
    assert got.doc is not None, f"nothing read (exit {got.code}): {got.err.strip()}"
    assert want.doc is not None
    assert got.code == want.code, got.err
    a = normalise(want.doc, base, want_root)
    b = normalise(got.doc, variant, variant.root)
    if variant.cuts:
        a, b = boundary(a, variant), boundary(b, variant)
    if variant.recipe.list_form:
        a, b = without_top_level(a), without_top_level(b)
    diff = tops(a, b, variant.slack_ms) if variant.slack_ms else []
    diff += same(a, b, variant.slack_ms)
    assert not diff, f"{variant.recipe.name}: differs from the original:\n" + "\n".join(diff)
    broken = {check for (n, check) in KNOWN_ON_MAIN if n == name}
    keep_invariants(got, broken)


def keep_invariants(got: Answer, broken: set[str]) -> None:
    """``check_analysis`` less what the original is known to break (reported there)."""
    import invariants

    assert got.doc is not None
    for check in (
        "finite",
        "shares",
        "device_sums",
        "counted_once",
        "verdict_reads_rows",
        "findings_agree",
        "counted_rows",
    ):
        if check not in broken:
            getattr(invariants, check)(got.doc)
    invariants.exit_code(got.code, got.doc)


def baseline(
    name: str, recipe: Recipe, sources: Any, originals: Any, where: Path
) -> tuple[Answer, Path, Variant | None]:
    """What a variant made by ``recipe`` must answer: the original's, or (shifted clocks) the
    original's with its times on the shifted grid."""
    base = recipe.baseline()
    if base is None:
        root, got = originals(name)
        return got, root, None
    made = make(sources(name), where, base)
    return answer(made.root), made.root, made


CASES = [
    pytest.param(n, p, id=f"{n}-{p}", marks=known(KNOWN, n, p))
    for p in PARTS
    for n in READ
    if applies(n, p)
]


@pytest.mark.parametrize(("name", "part"), CASES)
def test_variant(
    name: str, part: str, sources: Any, originals: Any, made: Any, tmp_path: Path
) -> None:
    recipe = PARTS[part]
    if part == "split":  # test_split_boundary reads it too
        variant, got = made(name, recipe)
    else:
        variant = make(sources(name), tmp_path / "variant", recipe)
        got = answer(variant.root)
    want, root, base = baseline(name, recipe, sources, originals, tmp_path / "baseline")
    check_answer(name, variant, got, want, root, base)


def _one_trace(name: str) -> bool:
    return kind(name) == "kineto" and name in SMALL and len(traces_in(name)) == 1


BY_FILE = [pytest.param(n, p, id=f"{n}-{p}") for p in UNSEEN for n in READ if _one_trace(n)]


@pytest.mark.parametrize(("name", "part"), BY_FILE)
def test_variant_by_file(
    name: str, part: str, sources: Any, originals: Any, tmp_path: Path
) -> None:
    """A metadata object first and the JSON Array Format, passed by file name."""
    variant = make(sources(name), tmp_path / "variant", PARTS[part])
    files = [
        p
        for p in variant.root.rglob("*")
        if p.is_file() and p.name.endswith((".json", ".json.gz")) and not p.name.startswith(".")
    ]
    traces = [p for p in files if str(p.relative_to(variant.root)) in variant.paths]
    (path,) = traces
    want_root, want = originals(name)
    got = answer(path)
    check_answer(name, variant, got, want, want_root)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=known(KNOWN, n, "boundary")) for n in SPLIT]
)
def test_split_boundary(name: str, originals: Any, made: Any) -> None:
    """A trace split in two at a step: the device rows of the steps either side of the cut,
    and what is read from them, as in the whole trace (the union of the steps)."""
    variant, got = made(name, PARTS["split"])
    assert variant.cuts
    want_root, want = originals(name)
    assert got.doc is not None and want.doc is not None
    a, b = normalise(want.doc, None, want_root), normalise(got.doc, variant, variant.root)
    for doc in (a, b):  # each half counts its own events, and is a capture of its run
        doc["inventory"] = [{k: v for k, v in r.items() if k != "events"} for r in doc["inventory"]]
        doc["run"] = {k: v for k, v in doc["run"].items() if k != "captures"}
        doc["runs"] = [{k: v for k, v in run.items() if k != "captures"} for run in doc["runs"]]
    diff = same(a, b)
    assert not diff, "\n".join(diff)


# -- every command on a variant -------------------------------------------------------------------

WORKING = Recipe(seed=12, reorder=1, rename=True, nest=2, compress=True)
COMMANDS = [
    pytest.param(n, marks=known(KNOWN_ON_MAIN, n, "compare_self"))
    for n in SMALL
    if kind(n) == "kineto"
]


@pytest.mark.parametrize("name", COMMANDS)
def test_variant_commands(
    name: str, originals: Any, made: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor, the text and ``compare`` on a variant that keeps the ranks (renumbered ranks are
    other ranks to compare: ``test_variant`` and ``test_combinations``
    hold them): doctor says what it says of the original (normalised), the text keeps the
    invariants, and compare of the original against the variant finds no change."""
    monkeypatch.setenv("COLUMNS", "80")
    variant, got = made(name, WORKING)
    want_root, want = originals(name)
    check_answer(name, variant, got, want, want_root)
    assert got.doc is not None and want.doc is not None
    root = str(variant.root)

    doctor, doctor_a = cli("doctor", root, "--json"), cli("doctor", str(want_root), "--json")
    check_doctor(decode(doctor.out), doctor.code, got.doc)
    assert not same(
        normalise(decode(doctor_a.out), None, want_root),
        normalise(decode(doctor.out), variant, variant.root),
    )

    text = cli("analyse", root, "--jobs", "1")
    assert text.code == got.code
    check_text(text.out, got.doc)

    compare = cli("compare", str(want_root), root, "--json")
    check_compare_self(decode(compare.out), compare.code, want.doc)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=known(KNOWN, n, "timeline")) for n in SMALL if kind(n) == "kineto"],
)
def test_variant_timeline(name: str, originals: Any, made: Any, tmp_path: Path) -> None:
    """The merged timeline of the variant: the invariants, and the original's events on the
    original's clock."""
    variant, got = made(name, WORKING)
    want_root, _ = originals(name)
    assert got.doc is not None
    merged, original = tmp_path / "t.json", tmp_path / "o.json"
    timeline = cli("timeline", str(variant.root), "-o", str(merged), "--jobs", "1")
    trace = decode(merged.read_text())
    check_timeline(trace, timeline.code, got.doc)
    cli("timeline", str(want_root), "-o", str(original), "--jobs", "1")
    mine = decode(original.read_text())
    assert len(trace["traceEvents"]) == len(mine["traceEvents"])
    assert trace["otherData"]["origin_wall_us"] == mine["otherData"]["origin_wall_us"]


# -- combinations ---------------------------------------------------------------------------------

#: What hypothesis draws from: the kineto sets that are small.
DRAWN = [n for n in SMALL if kind(n) == "kineto" and (n, "rename") not in KNOWN]


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, Recipe]:
    """A set, and any combination of the parts (a split only where each trace is alone at its
    rank: ``SPLIT``'s rule)."""
    name = draw(st.sampled_from(DRAWN))
    alone = len({r for _, _, r in traces_in(name)}) == len(traces_in(name))
    return name, Recipe(
        seed=draw(st.integers(0, 2**32 - 1)),
        reorder=draw(st.integers(0, 2)),
        metadata=draw(st.sampled_from([0, 30_000])),
        list_form=draw(st.booleans()),
        compress=draw(st.booleans()),
        rename=draw(st.booleans()),
        nest=draw(st.integers(0, 3)),
        split=alone and draw(st.booleans()),
        shift_us=draw(st.sampled_from([0.0, 1e15])),
        fraction_ns=draw(st.sampled_from([0.0, 0.001, 0.5, 0.999])),
        ranks=draw(st.booleans()),
    )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases())
def test_combinations(case: tuple[str, Recipe], sources: Any, originals: Any) -> None:
    """Any combination of the parts, with any parameters, on any small set: its original's
    answer (exactly transformed)."""
    name, recipe = case
    with tempfile.TemporaryDirectory() as tmp:
        variant = make(sources(name), Path(tmp) / "variant", recipe)
        want, root, base = baseline(name, recipe, sources, originals, Path(tmp) / "baseline")
        check_answer(name, variant, answer(variant.root), want, root, base)
