"""README.md, CONTRIBUTING.md and docs/*.md hold together: every relative link and ``#anchor``
resolves (by GitHub's heading slugs), every ``mindspeed-prof <command> --flag`` they show is one
the command line takes, every YAML block parses as Hydra reads it (a ``profiler_config`` in one
passes ``validate``), every repository path and ``mindspeed_prof.`` name they mention exists, and
none names an issue by number (CHANGELOG.md keeps the history)."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
        *(ROOT / "docs").glob("*.md"),
    ]
)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_ID = re.compile(r"<a\s[^>]*\b(?:id|name)=\"([^\"]+)\"")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
COMMAND_LINE = re.compile(r"(?:^|\s|\$ )mindspeed-prof\s+([a-z][\w-]*)([^#|;&]*)")
#: A path in the repository as the docs name one (the folders no user's project has).
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:tests|mindspeed_prof|benchmarks|hydra_plugins|scripts"
    r"|examples)/[\w./-]*)"
)
#: A dotted name in the package (a module, or a name in one).
DOTTED = re.compile(r"(?<![\w./-])mindspeed_prof(?:\.\w+)+")
#: An issue named by number: "issue 12", "issues 3 and 4", "(#20)", "#20,".
ISSUE = re.compile(r"\bissues? #?\d+|(?<![\w&/#])#\d+\b(?![-\w])", re.I)
#: What is not a user's page: the history, which names issues.
CURRENT = [d for d in DOCS if d.name != "CHANGELOG.md"]


@dataclass(frozen=True)
class Block:
    """A fenced code block: its info string and text, and where it starts."""

    path: Path
    line: int
    lang: str
    text: str


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def split(path: Path) -> tuple[list[tuple[int, str]], list[Block]]:
    """The prose lines (numbered, outside fences) and the fenced blocks of a Markdown file."""
    prose: list[tuple[int, str]] = []
    blocks: list[Block] = []
    fence: tuple[str, str, int, list[str]] | None = None
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = (m.group(1), m.group(2).lower(), n, [])
            else:
                prose.append((n, line))
        elif line.strip().startswith(fence[0]) and not line.strip().strip(fence[0][0]):
            blocks.append(Block(path, fence[2], fence[1], "\n".join(fence[3])))
            fence = None
        else:
            fence[3].append(line)
    assert fence is None, f"{where(path, fence[2])}: code block never closed"
    return prose, blocks


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger): the rendered text lower-cased, every
    character that is not a letter, mark, number, connector (``_``), space or hyphen dropped,
    then each space a hyphen."""
    parts = CODE_SPAN.split(heading)  # prose, fence, code, fence, code, ..., prose
    for i in range(0, len(parts), 3):  # outside code: a link shows its text, HTML nothing
        parts[i] = re.sub(r"<[^>]+>", "", re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", parts[i]))
    text = "".join(p for i, p in enumerate(parts) if i % 3 != 1)
    kept = (
        c
        for c in text.strip().lower()
        if c in " -" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every ``#anchor`` a file has on GitHub: heading slugs, numbered when repeated, and
    explicit ``<a id=...>``/``<a name=...>``."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in split(path)[0]:
        out.update(HTML_ID.findall(line))
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def paragraphs(path: Path) -> Iterator[tuple[int, str]]:
    """The prose of a file a paragraph at a time (a code span or a link may break across
    lines), with the paragraph's first line."""
    lines: list[tuple[int, str]] = []
    for n, line in [*split(path)[0], (0, "")]:
        if line.strip():
            lines.append((n, line))
        elif lines:
            yield lines[0][0], "\n".join(text for _, text in lines)
            lines = []


def links(path: Path) -> Iterator[tuple[int, str]]:
    """The targets of a file's links and reference definitions, outside code."""
    for n, para in paragraphs(path):
        bare = CODE_SPAN.sub(lambda m: "\n" * m.group().count("\n"), para)
        for m in LINK.finditer(bare):
            yield n + bare[: m.start()].count("\n"), m.group(1)
        for i, line in enumerate(bare.split("\n"), n):
            ref = REF_DEF.match(line)
            if ref:
                yield i, ref.group(1)


def broken(path: Path, target: str) -> str | None:
    """Why a link target does not resolve, or ``None``."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
        return None
    file, _, anchor = target.partition("#")
    dest = (path.parent / file).resolve() if file else path
    if not dest.exists():
        return f"no such file {file}"
    if ROOT not in dest.parents and dest != ROOT:
        return f"{file} is outside the repository"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"no heading #{anchor} in {dest.relative_to(ROOT)}"
    return None


def command_lines(path: Path, commands: set[str]) -> Iterator[tuple[int, str, str]]:
    """Each ``mindspeed-prof <command> <args>`` a reader may copy, in code blocks and inline
    code (where ``<command> <args>`` alone, e.g. ``compare --fail-over``, counts too), as
    (line, command, args)."""
    for block in split(path)[1]:
        for n, line in enumerate(block.text.splitlines(), block.line + 1):
            for command, args in COMMAND_LINE.findall(line):
                yield n, command, args
    for n, para in paragraphs(path):
        for m in CODE_SPAN.finditer(para):
            code = m.group(2).strip()
            found = COMMAND_LINE.findall(code)
            head, _, rest = code.partition(" ")
            if not found and head in commands and rest:
                found = [(head, rest)]
            for command, args in found:
                yield n + para[: m.start()].count("\n"), command, args


def options() -> dict[str, set[str]]:
    """Each subcommand's option strings, as its argparse parser takes them (``demo`` hands its
    arguments to Hydra, so its are Hydra's)."""
    from hydra._internal.utils import get_args_parser

    from mindspeed_prof.cli import parser

    (sub,) = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    out = {name: set(p._option_string_actions) for name, p in sub.choices.items()}
    out["demo"] = set(get_args_parser()._option_string_actions)
    return out


def flags(args: str) -> Iterator[str]:
    for token in re.split(r"[\s\[\]()]+", args):
        if re.match(r"^--?[A-Za-z]", token):
            yield token.split("=", 1)[0]


def lines(path: Path) -> Iterator[tuple[int, str]]:
    """Every line of a file, numbered, code blocks included."""
    yield from enumerate(path.read_text().splitlines(), 1)


def repo_paths(path: Path) -> Iterator[tuple[int, str]]:
    """The repository paths a file mentions, but a pattern (``benchmarks/<name>.py``,
    ``tests/fixtures/corpus/*``)."""
    for n, line in lines(path):
        for m in REPO_PATH.finditer(line):
            if line[m.end() : m.end() + 1] not in ("<", "*", "{"):
                yield n, m.group(1).rstrip(".")


def resolves(name: str) -> bool:
    """Whether ``name`` is a module of the package or a name in one, or a key of a capture's
    ``mindspeed_prof`` header (``mindspeed_prof.run``)."""
    import msgspec

    from mindspeed_prof.formats.header import CaptureHeader

    parts = name.split(".")
    if len(parts) == 2 and parts[1] in {f.name for f in msgspec.structs.fields(CaptureHeader)}:
        return True
    for i in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


# -- the tests --------------------------------------------------------------------------------
def test_the_docs_exist_and_the_readme_links_each() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for _, t in links(ROOT / "README.md")}
    assert len(DOCS) > 1
    assert [d.name for d in DOCS if d.parent == ROOT / "docs" and d not in linked] == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path: Path) -> None:
    bad = [
        f"{where(path, n)}: ({t}) {why}"
        for n, t in links(path)
        if (why := broken(path, t)) is not None
    ]
    assert bad == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_line_flag_exists(path: Path) -> None:
    known = options()
    bad = []
    for n, command, args in command_lines(path, set(known)):
        if command not in known:
            bad.append(f"{where(path, n)}: mindspeed-prof {command}: no such command")
            continue
        bad += [
            f"{where(path, n)}: mindspeed-prof {command} {flag}: no such option"
            for flag in flags(args)
            if flag not in known[command]
        ]
    assert bad == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_yaml_blocks_parse_and_their_profiler_config_validates(path: Path) -> None:
    from mindspeed_prof.config.validate import validate

    for block in split(path)[1]:
        if block.lang not in ("yaml", "yml"):
            continue
        doc = OmegaConf.to_container(OmegaConf.create(block.text))  # as Hydra reads YAML
        assert isinstance(doc, dict), f"{where(path, block.line)}: not a YAML mapping"
        if isinstance(doc.get("profiler_config"), dict):
            validate(doc)


@pytest.mark.parametrize("path", CURRENT, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_mentioned_exists(path: Path) -> None:
    bad = [f"{where(path, n)}: {p}" for n, p in repo_paths(path) if not (ROOT / p).exists()]
    assert bad == []


@pytest.mark.parametrize("path", CURRENT, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_package_name_mentioned_exists(path: Path) -> None:
    bad = [
        f"{where(path, n)}: {name}"
        for n, line in lines(path)
        for name in DOTTED.findall(line)
        if not resolves(name)
    ]
    assert bad == []


@pytest.mark.parametrize("path", CURRENT, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_is_named_by_number(path: Path) -> None:
    """A page says what is true now; which issue changed it is the changelog's (and git's)."""
    assert [f"{where(path, n)}: {m}" for n, line in lines(path) for m in ISSUE.findall(line)] == []


def test_the_fast_loop_leaves_out_every_registered_marker() -> None:
    """The fast loop in CONTRIBUTING.md names the markers pyproject.toml registers (pytest
    takes an unknown name in ``-m`` silently), and leaves each one out."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^markers = \[(.*?)\]$", pyproject, re.M | re.S)
    assert block is not None, "pyproject.toml: no pytest markers"
    registered = set(re.findall(r'"(\w+):', block.group(1)))
    dev = (ROOT / "CONTRIBUTING.md").read_text()
    m = re.search(r'^python -m pytest (?:-n \d+ --dist loadgroup )?-m "([^"]+)"$', dev, re.M)
    assert m is not None, "CONTRIBUTING.md: no fast-loop command"
    left_out = re.findall(r"not (\w+)", m.group(1))
    assert m.group(1) == " and ".join(f"not {name}" for name in left_out)
    assert set(left_out) == registered


# -- the checker itself -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Config: `profiler_config`", "config-profiler_config"),
        ("Presets (`profiler_config=<name>`)", "presets-profiler_configname"),
        (
            "`mindspeed-prof doctor <save> [--json] [--skew-ms MS]`",
            "mindspeed-prof-doctor-save---json---skew-ms-ms",
        ),
        ("What `analyse` and `compare` report", "what-analyse-and-compare-report"),
        (
            "Big runs: parallel, cached and Ray-distributed analysis",
            "big-runs-parallel-cached-and-ray-distributed-analysis",
        ),
        ("MindSpeed-RL-style integrated worker", "mindspeed-rl-style-integrated-worker"),
        ("Über [the link](x.md) 2.0", "über-the-link-20"),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_checker_finds_what_is_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "a.md").write_text("# Top\n## Top\n```\n# not a heading\n```\n")
    doc = tmp_path / "b.md"
    doc.write_text(
        "[ok](a.md#top-1) [gone](a.md#not-a-heading) [none](c.md) `[code](x.md)`\n"
        "[self](#here)\n## Here\n[web](https://example.com)\n"
    )
    assert [(n, broken(doc, t)) for n, t in links(doc)] == [
        (1, None),
        (1, "no heading #not-a-heading in a.md"),
        (1, "no such file c.md"),
        (2, None),
        (4, None),
    ]
    known = options()
    assert "--html" in known["analyse"] and "-m" in known["demo"]
    assert list(flags("DIR [--steps N] --ray=ADDR -j 2 -1 x-y")) == ["--steps", "--ray", "-j"]
    assert COMMAND_LINE.findall("$ mindspeed-prof capture d --stage s  # --not") == [
        ("capture", " d --stage s  ")
    ]


def test_mentions_are_found_and_checked(tmp_path: Path) -> None:
    doc = tmp_path / "c.md"
    doc.write_text(
        "See `tests/test_docs.py`, tests/gone.py.\n```\npython benchmarks/x.py\n```\n"
        "`benchmarks/<name>.py`, `.mindspeed_prof/job<N>.json`, a/tests/no.py\n"
        "`mindspeed_prof.views.gantt.gantt_svg`, `mindspeed_prof.run`, "
        "`mindspeed_prof.views.gone`\n(issue 30) issues 3 and 4 (#20) `ProfilerStep#12` "
        "&#20; #1-2\n"
    )
    assert list(repo_paths(doc)) == [
        (1, "tests/test_docs.py"),
        (1, "tests/gone.py"),
        (3, "benchmarks/x.py"),
    ]
    assert [(n, resolves(name)) for n, line in lines(doc) for name in DOTTED.findall(line)] == [
        (6, True),
        (6, True),
        (6, False),
    ]
    assert [m for _, line in lines(doc) for m in ISSUE.findall(line)] == [
        "issue 30",
        "issues 3",
        "#20",
    ]


def test_config_md_lists_every_field_with_its_default() -> None:
    """docs/config.md's two field tables hold every field of the schema, each once, with the
    schema's default (read as YAML reads it: an enum by its name, a tuple as a list)."""
    import dataclasses
    import enum

    from mindspeed_prof.config.schema import IntegratedConfig

    text = (ROOT / "docs" / "config.md").read_text()
    tables = re.findall(r"^\| `(?:integrated|extensions)` field .*?\n\n", text, re.M | re.S)
    assert len(tables) == 2
    rows = [
        row for table in tables for row in re.findall(r"^\| ([a-z_0-9]+) \| (.*?) \|", table, re.M)
    ]
    documented = dict(rows)
    assert len(documented) == len(rows), "a field documented twice"

    def plain(value: object) -> object:
        if isinstance(value, enum.Enum):
            return value.name
        return list(value) if isinstance(value, tuple) else value

    def read(text: str) -> object:  # a cell as YAML reads it
        value = OmegaConf.to_container(OmegaConf.create(f"v: {text}"))
        assert isinstance(value, dict)
        return value["v"]

    fields = {f.name: plain(f.default) for f in dataclasses.fields(IntegratedConfig)}
    assert set(fields) - set(documented) == set(), "fields missing from docs/config.md"
    assert set(documented) - set(fields) == set(), "rows that are no field"
    wrong = {k: (documented[k], v) for k, v in fields.items() if read(documented[k]) != v}
    assert wrong == {}


def test_the_docs_list_the_counters_the_analysis_knows() -> None:
    """README.md, docs/counters.md's table (with each name's kind) and docs/ledger.md's table
    list exactly the standard counters of ``formats.counters``, in its order."""
    from mindspeed_prof.formats.counters import STANDARD

    readme = (ROOT / "README.md").read_text()
    sentence = re.search(r"The names the analysis knows: (.*?); any other name", readme, re.S)
    assert sentence is not None
    assert re.findall(r"`(\w+)`", sentence[1]) == [c.name for c in STANDARD]
    counters = (ROOT / "docs" / "counters.md").read_text().partition("## Standard names")[2]
    rows = re.findall(r"^\| `(\w+)` \| (number|distribution) \|", counters, re.M)
    assert rows == [(c.name, c.kind) for c in STANDARD]
    ledger = (
        (ROOT / "docs" / "ledger.md").read_text().partition("## Counters the analysis knows")[2]
    )
    table = ledger.partition("\n\n")[2].partition("\n\n")[0]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == [c.name for c in STANDARD]


def test_config_md_puts_each_field_in_the_section_the_schema_gives_it() -> None:
    """docs/config.md's ``integrated`` table lists MindSpeed-RL's fields (those the schema
    marks so in their metadata), its ``extensions`` table the others."""
    from mindspeed_prof.config.schema import EXTENSION_FIELDS, MINDSPEED_RL_FIELDS

    text = (ROOT / "docs" / "config.md").read_text()
    listed = {}
    for section in ("integrated", "extensions"):
        table = re.search(rf"^\| `{section}` field .*?\n\n", text, re.M | re.S)
        assert table is not None, section
        listed[section] = set(re.findall(r"^\| ([a-z_0-9]+) \|", table[0], re.M))
    assert listed == {"integrated": set(MINDSPEED_RL_FIELDS), "extensions": set(EXTENSION_FIELDS)}


def test_hydra_md_shows_the_example_app_as_it_is() -> None:
    doc = (ROOT / "docs" / "hydra.md").read_text()
    blocks = re.findall(r"```(\w+)\n(.*?)```", doc, re.DOTALL)
    shown = {lang: text for lang, text in blocks if text.startswith(('"""A tiny RL', "defaults:"))}
    assert shown["python"] == (ROOT / "examples" / "train.py").read_text()
    assert shown["yaml"] == (ROOT / "examples" / "conf" / "config.yaml").read_text()
