"""Start of a Hydra app with mindspeed-prof installed, against the same app without it.

Whole-app A/B: ``python app.py`` (a ``@hydra.main`` app that does nothing) timed as a process
(its CPU time, user + system, from ``getrusage``: wall time on this shared machine follows
other processes' load; an app's start is CPU-bound once its files are in the page cache), with the
plugin hidden (A) and visible (B); then B opted in (``profiler_config: none`` in its
defaults, which composes a preset and runs the callback). Triples are interleaved, their
order alternated, and triples are added until the 95% interval of the geometric-mean ratio
is within +-2% (enough to resolve 5%) or the time budget is spent; the verdict uses the
interval's upper bound (goal 1.05x for the installed plugin, reported for opt-in). The
plugin module's own import is reported beside them. The plugin only adds a config source;
the presets are built when an app first uses one of their groups, so the opted-in start pays
for composing the schema and the callback, the installed-only start does not.
"""

from __future__ import annotations

import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from benchmarks.report import Report
from benchmarks.timing import Paired

__all__ = ["run"]

APP = textwrap.dedent("""
    import sys, types
    if sys.argv.pop(1) == "without":  # hide the plugin: Hydra imports an empty module instead
        for name in ("hydra_plugins.mindspeed_prof",
                     "hydra_plugins.mindspeed_prof.mindspeed_prof_plugin"):
            m = types.ModuleType(name); m.__path__ = []; sys.modules[name] = m
    import hydra
    @hydra.main(version_base=None, config_path=".", config_name=sys.argv.pop(1))
    def main(cfg):
        pass
    main()
""")


def run(report: Report) -> None:
    tmp = Path(tempfile.mkdtemp())
    (tmp / "app.py").write_text(APP)
    (tmp / "plain.yaml").write_text("x: 1\n")
    (tmp / "with.yaml").write_text("defaults:\n  - profiler_config: none\n  - _self_\nx: 1\n")

    def once(mode: str, cfg: str) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [
                sys.executable,
                "app.py",
                mode,
                cfg,
                "hydra.run.dir=.",
                "hydra.output_subdir=null",
                "hydra/job_logging=disabled",
                "hydra/hydra_logging=disabled",
            ],
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    opt_in: list[float] = []

    def with_plugin() -> float:
        opt_in.append(once("with", "with"))  # the third of each triple, order alternates too
        return once("with", "plain")

    budget = 1 if report.quick else 240  # about one triple a second; +-2% needs ~250 here
    try:
        pairs = Paired().run(
            lambda: once("without", "plain"),
            with_plugin,
            min_pairs=3 if report.quick else 20,
            resolve=0.02,
            budget_s=budget,
        )
        probe = (
            "import time, hydra, hydra.core.config_store, hydra.plugins.search_path_plugin\n"
            "t = time.process_time()\n"
            "import hydra_plugins.mindspeed_prof.mindspeed_prof_plugin\n"
            "print(time.process_time() - t)"
        )
        own = statistics.median(
            float(
                subprocess.run(
                    [sys.executable, "-c", probe],
                    cwd=tmp,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )
            for _ in range(2 if report.quick else 5)
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ok = "resolved" if pairs.half_width() <= 0.02 else "NOT resolved to +-2% in the budget"
    report.add(
        "Hydra app start with the plugin installed, whole-app A/B",
        "the same app without it",
        pairs.ratio,
        1.05,
        f"{pairs.describe()}; {ok}",
        ci=pairs.ci,
    )
    opted = Paired(a=list(pairs.a), b=opt_in)
    report.add(
        "Hydra app start opted in (`profiler_config: none` in defaults), whole-app A/B",
        "the same app without the plugin",
        opted.ratio,
        None,
        f"{opted.describe()}: composes a preset, runs the callback",
        ci=opted.ci,
    )
    base = statistics.median(pairs.a)
    report.add(
        "Hydra app start: the plugin module's own import",
        "the app's start without it",
        (base + own) / base,
        None,
        f"{own * 1e3:.1f} ms per {base * 1e3:.0f} ms start",
    )
