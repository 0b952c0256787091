"""The package's import graph: no cycles, and every layer imports only the layers below it.

Read from the source (every ``import``, at module level or inside a function, type-checking ones
too), so a lazy import that points up is caught as well as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mindspeed_prof

PACKAGE = Path(mindspeed_prof.__file__).parent
ROOT = "mindspeed_prof"

#: The readers: the shared ones (``analysis.readers``: the fold, the model, the device breakdown,
#: ...) and the two capture families on top of them.
READERS = {"analysis.readers", "analysis.readers.kineto", "analysis.readers.npu"}
#: Each layer and the layers it may import (its own included). Modules not named here belong
#: to the first prefix that matches. Each capture family of readers may import the shared
#: readers but not the other family; the shared readers import neither.
LAYERS: dict[str, set[str]] = {
    "stats": {"stats"},
    "formats": {"formats", "jsonio"},
    "config": {"config"},
    "jsonio": {"jsonio"},
    "mstx": {"mstx"},
    "extras": {"extras"},
    "pool": {"pool"},
    "capture": {"capture", "config", "extras", "formats", "jsonio", "mstx", "stats"},
    "analysis.readers": {"analysis.readers", "config", "formats", "jsonio"},
    "analysis.readers.kineto": {
        "analysis.readers.kineto",
        "analysis.readers",
        "config",
        "formats",
        "jsonio",
    },
    "analysis.readers.npu": {
        "analysis.readers.npu",
        "analysis.readers",
        "config",
        "formats",
        "jsonio",
    },
    "analysis": {"analysis", *READERS, "config", "formats", "jsonio", "pool", "stats"},
    # The timeline is drawn from what the readers give, not from an analysis; nothing in the
    # package but its command imports it.
    "analysis.timeline": {"analysis.timeline", *READERS, "config", "formats", "jsonio", "pool"},
    # The doctor reads as ``analyse`` reads (the analysis below it); nothing imports it but
    # its command.
    "analysis.doctor": {
        "analysis.doctor",
        "analysis",
        *READERS,
        "config",
        "formats",
        "jsonio",
        "stats",
    },
    "views": {"views", "analysis", *READERS, "config", "formats"},
    "testing": {"testing", "capture", "config", "formats", "mstx"},
    "hydra": {
        "hydra",
        "capture",
        "analysis",
        *READERS,
        "views",
        "config",
        "formats",
        "jsonio",
        "mstx",
    },
    # Ray, a layer above capture and analysis (below cli and demo): they never import it, it
    # plugs into them (``capture.plugins``, the reader ``analyse`` is handed).
    "ray": {"ray", "capture", "analysis", *READERS, "config", "formats", "jsonio"},
}
#: Packages that gather the layers below them: the readers' package (``read``, ``discover``)
#: dispatches to both families.
GATHERERS: dict[str, set[str]] = {"analysis.readers": READERS}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(name: str) -> bool:
    base = PACKAGE.parent.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    """The package's modules that ``path`` imports (a name imported from a package that is a
    module of its own counts as that module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == ROOT)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == ROOT
        ):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if _exists(sub) else node.module)
    return out


def graph() -> dict[str, set[str]]:
    edges = {_module(p): _imports(p) for p in PACKAGE.rglob("*.py")}
    return {m: {t for t in targets if t != m} for m, targets in edges.items()}


def _layer(module: str) -> str | None:
    name = module.removeprefix(ROOT + ".")
    return next(
        (
            layer
            for layer in sorted(LAYERS, key=len, reverse=True)
            if name == layer or name.startswith(layer + ".")
        ),
        None,
    )


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read() -> None:
    edges = graph()
    assert (
        "mindspeed_prof.analysis.readers.fold"
        in edges["mindspeed_prof.analysis.readers.kineto.chrome"]
    )
    assert "mindspeed_prof.capture.capturer" in edges["mindspeed_prof.capture.profiler"]
    assert "mindspeed_prof.views.gantt" in edges["mindspeed_prof.views.html.page"]  # lazy
    assert "mindspeed_prof.views.text.details" in edges["mindspeed_prof.views.text.analyse"]
    assert (
        "mindspeed_prof.analysis.timeline.detail" in edges["mindspeed_prof.analysis.timeline.emit"]
    )
    assert "mindspeed_prof.analysis.doctor.health" in edges["mindspeed_prof.analysis.doctor.ranks"]
    assert "mindspeed_prof.analysis.timeline.build" in edges["mindspeed_prof.analysis.timeline"]
    assert "mindspeed_prof.capture.plugins" in edges["mindspeed_prof.ray.board"]
    assert "mindspeed_prof.ray.cluster" in edges["mindspeed_prof.cli.common"]  # lazy


def test_no_import_cycles() -> None:
    assert _cycles(graph()) == []


def test_the_text_and_html_views_do_not_import_each_other() -> None:
    """The terminal never loads the report's modules (matplotlib behind them) and the report
    never the terminal's (rich): what both say lives in ``views.words``."""
    views = f"{ROOT}.views"
    wrong = [
        f"{m} -> {t}"
        for m, targets in sorted(graph().items())
        for t in sorted(targets)
        for mine, other in (("text", "html"), ("html", "text"))
        if (m == f"{views}.{mine}" or m.startswith(f"{views}.{mine}."))
        and (t == f"{views}.{other}" or t.startswith(f"{views}.{other}."))
    ]
    assert wrong == []
    assert f"{views}.words" in graph()[f"{views}.html.page"]


def test_every_layer_imports_only_the_layers_below_it() -> None:
    wrong = []
    for module, targets in sorted(graph().items()):
        layer = _layer(module)
        if layer is None:  # cli, demo, the package itself: the top, anything goes
            continue
        allowed = LAYERS[layer] | GATHERERS.get(module.removeprefix(ROOT + "."), set())
        for target in sorted(targets):
            there = _layer(target)
            if there is not None and there not in allowed:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_the_reader_families_import_the_shared_readers_not_each_other() -> None:
    """Kineto's readers and torch_npu's import the shared readers, never each other; the
    shared readers import neither family (nor the package that gathers them)."""
    readers = f"{ROOT}.analysis.readers"
    edges = graph()
    assert f"{readers}.fold" in edges[f"{readers}.kineto.chrome"]
    assert f"{readers}.fold" in edges[f"{readers}.npu.trace"]
    assert _layer(f"{readers}.npu.text") == "analysis.readers.npu"
    assert _layer(f"{readers}.kineto.memory") == "analysis.readers.kineto"
    assert (
        _layer(f"{readers}.device.breakdown") == _layer(f"{readers}.labels") == "analysis.readers"
    )
    wrong = [
        f"{m} -> {t}"
        for m, targets in sorted(edges.items())
        for t in sorted(targets)
        if m.startswith(readers + ".")
        and t.startswith(readers)
        and _layer(m) != _layer(t)
        and _layer(t) != "analysis.readers"
    ]
    wrong += [
        f"{m} -> {t}"
        for m, targets in sorted(edges.items())
        for t in sorted(targets)
        if _layer(m) == "analysis.readers" and m != readers and t == readers
    ]
    assert wrong == []


def test_the_checks_catch_what_they_are_for() -> None:
    """A cycle, an import from capture into analysis, one from a reader into the analysis
    above it, from a shared reader into a family and from one family into the other are each
    found (on a made-up graph)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    for module, target in (
        ("mindspeed_prof.capture.profiler", "mindspeed_prof.analysis.summary"),
        ("mindspeed_prof.analysis.readers.fold", "mindspeed_prof.analysis.analyse"),
        ("mindspeed_prof.analysis.readers.fold", "mindspeed_prof.analysis.readers.kineto.memory"),
        (
            "mindspeed_prof.analysis.readers.kineto.chrome",
            "mindspeed_prof.analysis.readers.npu.trace",
        ),
        (
            "mindspeed_prof.analysis.readers.npu.text",
            "mindspeed_prof.analysis.readers.kineto.sqlite",
        ),
        ("mindspeed_prof.analysis.sweep", "mindspeed_prof.views.text"),
        ("mindspeed_prof.analysis.timeline.emit", "mindspeed_prof.analysis.analyse"),
        ("mindspeed_prof.analysis.verdict", "mindspeed_prof.analysis.timeline"),
        ("mindspeed_prof.analysis.analyse", "mindspeed_prof.analysis.doctor.health"),
        ("mindspeed_prof.views.text.analyse", "mindspeed_prof.analysis.doctor.check"),
        ("mindspeed_prof.analysis.doctor.killed", "mindspeed_prof.ray"),
        ("mindspeed_prof.capture.ondemand", "mindspeed_prof.ray.board"),
        ("mindspeed_prof.analysis.analyse", "mindspeed_prof.ray.cluster"),
    ):
        layer, there = _layer(module), _layer(target)
        assert layer is not None and there is not None and there not in LAYERS[layer]


def test_the_timeline_and_the_doctor_are_packages_with_layers_of_their_own() -> None:
    """Every module of ``analysis.timeline`` and ``analysis.doctor`` belongs to its package's
    layer (not the analysis's), and no loose ``timeline_*`` or ``doctor*`` module is left
    beside them."""
    edges = graph()
    for package in ("timeline", "doctor"):
        modules = [m for m in edges if m.startswith(f"{ROOT}.analysis.{package}.")]
        assert len(modules) >= 5 and f"{ROOT}.analysis.{package}" in edges
        assert {_layer(m) for m in modules} == {f"analysis.{package}"}
    loose = [
        p.name
        for p in (PACKAGE / "analysis").glob("*.py")
        if p.stem.startswith(("timeline", "doctor"))
    ]
    assert loose == []


def test_the_fold_is_a_package_of_the_readers() -> None:
    """The readers' shared fold is ``readers.fold`` (collect, batch, device), no loose
    ``fold_*`` module beside it; every reader reaches it through the package."""
    edges = graph()
    fold = f"{ROOT}.analysis.readers.fold"
    assert {f"{fold}.collect", f"{fold}.batch", f"{fold}.device"} <= set(edges)
    assert list((PACKAGE / "analysis" / "readers").glob("fold_*.py")) == []
    assert fold in edges[f"{ROOT}.analysis.readers.npu.trace"]


FINDINGS = f"{ROOT}.analysis.findings"
#: What every family of findings may import of ``analysis.findings``: the shared helpers.
SHARED = {f"{FINDINGS}.common", f"{FINDINGS}.finding"}


def _family(module: str) -> str | None:
    """``cuda``, ``rl``, ``host``, ``npu`` (the subpackage and its modules), or None for the
    package itself and its shared helpers."""
    name = module.removeprefix(FINDINGS + ".")
    if name == module or module in SHARED:
        return None
    return name.split(".")[0]


def test_findings_families_share_only_the_common_helpers() -> None:
    """Each family of findings (cuda, host, rl, the npu subpackage's modules) imports, of
    ``analysis.findings``, the shared helpers and its own family only; inside the npu
    subpackage, no module imports the package that gathers them (its ``__init__``)."""
    edges = graph()
    assert {f"{FINDINGS}.npu.captures", f"{FINDINGS}.common"} <= edges[f"{FINDINGS}.npu.ops"]
    wrong = []
    for module, targets in sorted(edges.items()):
        family = _family(module)
        if family is None:
            continue
        for target in sorted(t for t in targets if t.startswith(FINDINGS)):
            if target in SHARED or (_family(target) == family and target != f"{FINDINGS}.npu"):
                continue
            wrong.append(f"{module} -> {target}")
    assert wrong == []
    assert _family(f"{FINDINGS}.npu.env") == _family(f"{FINDINGS}.npu") == "npu"
    assert _family(f"{FINDINGS}.common") is None and _family(f"{FINDINGS}.cuda") == "cuda"


REPORT = f"{ROOT}.analysis.report"
#: ``analysis.report`` in the order an answer is made: what was read (``captures``) and chosen
#: (``settings``), the tables computed from them (``compute``, ``tables``), then the verdict and
#: the findings over the tables (``report``). Each module may import the ones named for it.
REPORT_ORDER: dict[str, set[str]] = {
    "captures": set(),
    "settings": set(),
    "compute": {"captures"},
    "per_step": {"compute"},
    "tables": {"captures", "compute", "per_step", "settings"},
    "report": {"captures", "settings", "tables"},
}
#: What judges the tables: computing them must not need it.
JUDGES = (
    f"{ROOT}.analysis.findings",
    f"{ROOT}.analysis.verdict",
    f"{ROOT}.analysis.next_capture",
    f"{ROOT}.views",
)


def test_the_report_package_reads_computes_then_judges() -> None:
    """Each module of ``analysis.report`` imports only the modules before it; the tables are
    computed without the findings, the verdict, Next or a view (which read them), and those
    read the tables, never ``report.report`` that runs them."""
    edges = graph()
    assert set(REPORT_ORDER) == {
        m.removeprefix(REPORT + ".") for m in edges if m.startswith(REPORT + ".")
    }
    wrong = [
        f"{REPORT}.{name} -> {t}"
        for name, allowed in REPORT_ORDER.items()
        for t in sorted(edges[f"{REPORT}.{name}"])
        if t.startswith(REPORT + ".") and t.removeprefix(REPORT + ".") not in allowed
    ]
    wrong += [
        f"{REPORT}.{name} -> {t}"
        for name in REPORT_ORDER
        if name != "report"
        for t in sorted(edges[f"{REPORT}.{name}"])
        if t.startswith(JUDGES)
    ]
    wrong += [
        f"{m} -> {t}"
        for m, targets in sorted(edges.items())
        if m.startswith(JUDGES[:3])
        for t in sorted(targets)
        if t == f"{REPORT}.report"
    ]
    assert wrong == []
    assert f"{REPORT}.tables" in edges[f"{ROOT}.analysis.verdict"]
    assert f"{ROOT}.analysis.findings" in edges[f"{REPORT}.report"]
