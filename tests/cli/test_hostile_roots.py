"""Every command over roots built to break it: ``manifest.json`` and ``cluster_summary.json``
linked to ``/dev/zero``, a capture whose file name is not UTF-8, links to files outside the root,
host labels and manifest fields holding U+202E, U+2028, U+2029 and ANSI escapes. Each command
ends with its documented exit code, names what it did not read in one line, never shows a byte
of a file outside the root and never writes a control character to the terminal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run

EVIL = "h\u202eevil\u2028x\u2029y\x1b[31mred"
SHOWN = "h\\u202eevil\\u2028x\\u2029y\\x1b[31mred"
RAW = ("\x1b", "\x00", "\u202e", "\u2028", "\u2029")
SECRET = "SECRET-op-name"
ODD = b"rank0_\xff\xfe_1_step1.mstx.trace.json"

#: Runs each command in this process (``main``), under a 3 GiB address-space limit, and
#: prints what each wrote and returned as JSON (ASCII: a surrogate survives as an escape).
DRIVER = r"""
import contextlib, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from mindspeed_prof.cli import main
out = []
for args in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            rc = main(args)
        except BaseException as err:
            rc = f"{type(err).__name__}: {err}"
    out.append({"args": args, "rc": rc, "stdout": o.getvalue(), "stderr": e.getvalue()})
print(json.dumps(out))
"""


def _host(run: Path, host: str) -> None:
    """Every capture under ``run`` claiming ``host``, and a second copy claiming another
    (two captures of one rank: their host labels are shown)."""
    for path in sorted(run.rglob("*.json")):
        doc = json.loads(path.read_text())
        doc.setdefault("mindspeed_prof", {})["host"] = host
        path.write_text(json.dumps(doc))
        doc["mindspeed_prof"]["host"] = host + "2"
        path.with_name(path.name.replace("rank0_", "rank0_b_")).write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hostile")
    run = make_run(base / "run", ranks=(0, 1), steps=2)
    out = {
        name: Path(shutil.copytree(run, base / name)) for name in ("zero", "bytes", "link", "hosts")
    }
    zero = out["zero"]
    for name in ("manifest.json", "cluster_summary.json", "integrated/manifest.rank1.json"):
        (zero / name).symlink_to("/dev/zero")
    (zero / "integrated" / "worker.json").write_text(
        json.dumps(
            {
                "traceEvents": [  # no rank:
                    {
                        "ph": "X",
                        "cat": "user_annotation",
                        "name": "ProfilerStep#1",
                        "ts": 0,
                        "dur": 10,
                        "pid": 1,
                        "tid": 1,
                    }
                ]
            }
        )
    )  # its rank is looked for in the manifests
    folder = out["bytes"] / "integrated"
    source = next(folder.glob("rank0_*.mstx.trace.json"))
    os.rename(source, os.path.join(os.fsencode(folder), ODD))
    secret = base / "secret.pt.trace.json"
    secret.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": SECRET,
                        "ts": 1,
                        "dur": 2,
                        "pid": 1,
                        "tid": 1,
                    }
                ]
            }
        )
    )
    (out["link"] / "integrated" / "rank5_x_1_step1.pt.trace.json").symlink_to(secret)
    (out["link"] / "integrated" / "rank6_x_1_step1.pt.trace.json").symlink_to("/etc/passwd")
    (out["link"] / "manifest.json").symlink_to(secret)
    hosts = out["hosts"]
    shutil.rmtree(hosts / "integrated")
    shutil.copytree(
        run / "integrated",
        hosts / "integrated",
        ignore=lambda _, names: [n for n in names if n.startswith(("rank1", "."))],
    )
    _host(hosts, EVIL)
    sweep = base / "sweep"
    (sweep / "0").mkdir(parents=True)
    (sweep / "0" / "manifest.json").symlink_to("/dev/zero")
    shutil.copytree(hosts, sweep / "1")
    (sweep / "1" / "manifest.json").write_text(
        json.dumps(
            {
                "status": "completed",
                "profiler_config": {"integrated": {"stage": EVIL}},
                "job": {"overrides": [f"x={EVIL}"]},
                "error": EVIL,
                "captures": [{"files": [str(secret), "/etc/passwd"]}],
            }
        )
    )
    out["sweep"] = sweep
    return out


def _commands(root: Path, html: Path, timeline: Path) -> list[list[str]]:
    r = str(root)
    return [
        ["analyse", r],
        ["analyse", r, "--json"],
        ["analyse", r, "--html", str(html)],
        ["timeline", r, "-o", str(timeline)],
        ["doctor", r],
        ["doctor", r, "--json"],
        ["compare", r, r],
        ["compare", r, r, "--json"],
    ]


def _run(commands: list[list[str]], tmp_path: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return list(json.loads(proc.stdout))


#: The exit codes each command may end with here: 0 all read, 1 nothing read, 3 some files
#: skipped or doctor's findings.
ALLOWED = {"analyse": {0, 3}, "timeline": {0, 3}, "doctor": {0, 3}, "compare": {0, 3}, "sweep": {0}}


def _check(results: list[dict[str, Any]]) -> str:
    """Every command ended with an allowed code, wrote text a UTF-8 terminal takes, no raw
    control character and nothing of the files outside; returns all their output."""
    seen = []
    for r in results:
        text = r["stdout"] + r["stderr"]
        assert r["rc"] in ALLOWED[r["args"][0]], (r["args"], r["rc"], r["stderr"][-600:])
        text.encode("utf-8")  # no lone surrogate: a UTF-8 terminal can show all of it
        assert not [c for c in RAW if c in text], (r["args"], text[-600:])
        assert SECRET not in text and "root:x:" not in text, r["args"]
        assert "Traceback" not in text, r["args"]
        if "--json" in r["args"]:
            json.loads(r["stdout"])
            assert r["stdout"].isascii()
        seen.append(text)
    return "\n".join(seen)


def test_links_to_dev_zero_are_refused_and_named(roots: dict[str, Path], tmp_path: Path) -> None:
    root = roots["zero"]
    results = _run(_commands(root, tmp_path / "r.html", tmp_path / "t.json"), tmp_path)
    _check(results)
    doctor = next(r for r in results if r["args"] == ["doctor", str(root)])
    assert doctor["rc"] == 3
    for name in ("manifest.json", "cluster_summary.json", "integrated/manifest.rank1.json"):
        assert f"{name}: not read: a symbolic link, not followed\n" in doctor["stdout"]
    document = json.loads(
        next(r for r in results if r["args"][-1] == "--json" and r["args"][0] == "analyse")[
            "stdout"
        ]
    )
    assert {r["rank"] for r in document["stage_rank"]} == {0, 1}


def test_a_file_name_that_is_not_utf8_is_read_and_shown_escaped(
    roots: dict[str, Path], tmp_path: Path
) -> None:
    root = roots["bytes"]
    html = tmp_path / "r.html"
    results = _run(_commands(root, html, tmp_path / "t.json"), tmp_path)
    _check(results)
    assert all(r["rc"] == 0 for r in results), [(r["args"], r["rc"]) for r in results]
    page = html.read_text(encoding="utf-8")
    assert "rank0_\\xff\\xfe_1_step1.mstx.trace.json" in page
    document = json.loads(results[1]["stdout"])
    assert {r["rank"] for r in document["stage_rank"]} == {0, 1}
    json.loads((tmp_path / "t.json").read_text())  # the merged trace is whole JSON


def test_links_to_files_outside_the_root_are_not_read(
    roots: dict[str, Path], tmp_path: Path
) -> None:
    root = roots["link"]
    html = tmp_path / "r.html"
    results = _run(_commands(root, html, tmp_path / "t.json"), tmp_path)
    _check(results)
    for r in results:
        if r["args"][0] in ("analyse", "timeline", "compare"):
            assert r["rc"] == 3, r["args"]
            for name in ("rank5_x_1_step1", "rank6_x_1_step1"):
                said = [line for line in r["stderr"].splitlines() if name in line]
                assert len(said) == (2 if r["args"][0] == "compare" else 1), r["args"]
                assert said[0].endswith(
                    f"a link to a file outside {root}: not read (analyse its own folder)"
                )
    doctor = next(r for r in results if r["args"] == ["doctor", str(root)])
    assert "manifest.json: not read: a symbolic link, not followed" in doctor["stdout"]
    for path in (html, tmp_path / "t.json"):
        assert SECRET not in path.read_text() and "root:x:" not in path.read_text()


def test_host_labels_and_manifest_fields_are_shown_escaped(
    roots: dict[str, Path], tmp_path: Path
) -> None:
    root = roots["hosts"]
    html = tmp_path / "r.html"
    results = _run(
        [
            *_commands(root, html, tmp_path / "t.json"),
            ["sweep", str(roots["sweep"])],
            ["sweep", str(roots["sweep"]), "--json"],
        ],
        tmp_path,
    )
    text = _check(results)
    said = results[0]["stdout"] + results[0]["stderr"]
    # a host label that is no name is dropped from the header, and the note names it escaped
    assert "host that is no name ('h\\u202e" in said and not [c for c in RAW if c in said]
    page = html.read_text(encoding="utf-8")
    assert SHOWN in page and not [c for c in RAW if c in page]
    sweep = next(r for r in results if r["args"][0] == "sweep")["stdout"]
    assert f"x={SHOWN}" in sweep and f"failed: {SHOWN}" in sweep
    assert f"2 listed files outside {roots['sweep'] / '1'} not read" in sweep
    assert (
        "job 0: "
        + str(roots["sweep"] / "0" / "manifest.json")
        + (": a symbolic link, not followed")
        in sweep
    )
    assert SHOWN in text
