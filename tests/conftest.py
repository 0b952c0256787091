"""Shared fixtures: process-state isolation, a Hydra app outside the package, one Ray cluster,
and one hypothesis seed per run, printed so a red run can be replayed."""

from __future__ import annotations

import os
import random
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run
from helpers import tested_path
from hypothesis import Phase, settings

from mindspeed_prof.testing.state import process_state

if os.environ.get("MUTANT_UNDER_TEST"):  # under mutmut a failure is a kill: shrinking it is waste
    settings.register_profile("mutation", phases=[Phase.explicit, Phase.generate])
    settings.load_profile("mutation")


#: The run's hypothesis seed, for xdist's workers (set by the controller).
_SEED = "MINDSPEED_PROF_TEST_SEED"


@pytest.hookimpl(tryfirst=True)  # before hypothesis' own pytest_configure reads the option
def pytest_configure(config: pytest.Config) -> None:
    """One seed for the whole run unless given; with a seed hypothesis skips its example
    database, so the seed alone replays the run."""
    if config.getoption("hypothesis_seed", None) is None:
        # xdist's workers inherit the environment: every worker takes the run's one seed
        seed = os.environ.setdefault(_SEED, str(random.SystemRandom().randrange(2**32)))
        config.option.hypothesis_seed = int(seed)
    # Subprocesses (CLI runs, scripts, Ray workers) import the package these tests import.
    os.environ["PYTHONPATH"] = tested_path(os.environ.get("PYTHONPATH"))
    _write_bytecode()
    # xdist hands out the groups in the order they are collected (see _heaviest_first), not
    # sorted by how many tests each holds: one of few long tests (the benchmarks' smoke run)
    # handed out last keeps one worker busy while the other idles.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _write_bytecode() -> None:
    """Bytecode caches written (``__pycache__``, gitignored) where the environment says not to
    (``PYTHONDONTWRITEBYTECODE``, as on this project's machines): else every test subprocess
    (hundreds of CLI runs, Hydra apps, Ray workers) compiles the checkout's modules again, and
    each xdist worker rewrites every test module again (a third of a quiet run's collection).
    Not under mutmut, whose mutants may keep a source file's size and second."""
    if os.environ.get("MUTANT_UNDER_TEST"):
        return
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers for the fixtures' kinds; under xdist (``--dist loadgroup``) a file's tests run
    in one worker, so a module fixture (a reference tool's runs) is set up once, and every test
    on the session's Ray cluster in one worker, so there is one cluster."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "ray_cluster" in fixtures:
            item.add_marker(pytest.mark.ray)
        group = "ray" if "ray_cluster" in fixtures else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        if "app" in fixtures:
            item.add_marker(pytest.mark.hydra_app)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = _heaviest_first(items)


#: A rough cost per test, by its marks (pyproject's markers), to order the xdist groups.
_COST = {"slow": 100, "ray": 20, "hydra_app": 20, "reference": 20}


def _heaviest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items with their xdist groups in order of a rough cost (a test of the four marks
    weighs 20 to 100 unmarked ones), heaviest first, collection order kept within a group:
    the long groups start first and the short ones fill in at the end, on both workers."""

    def group(item: pytest.Item) -> str:
        mark = item.get_closest_marker("xdist_group")
        return str(mark.args[0]) if mark else item.nodeid

    cost: dict[str, int] = {}
    for item in items:
        weight = max((w for m, w in _COST.items() if item.get_closest_marker(m)), default=1)
        cost[group(item)] = cost.get(group(item), 0) + weight
    return sorted(items, key=lambda item: -cost[group(item)])


def _replay(config: pytest.Config) -> str:
    seed = config.getoption("hypothesis_seed")
    return f"hypothesis seed: {seed} (replay: pytest --hypothesis-seed={seed})"


def pytest_report_header(config: pytest.Config) -> str:
    return _replay(config)


@pytest.fixture(autouse=True)
def _isolated_process_state() -> Iterator[None]:
    """Every test starts from the same process-wide state (current profiler, range sink,
    signal handlers, atexit hooks, the torch_npu double), whichever tests ran before."""
    with process_state():
        yield


@pytest.fixture(autouse=True)
def _timelines_nest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JSON timeline a test writes in this process keeps Perfetto's nesting: on each
    thread, slices nest or do not overlap (``timeline_nesting``)."""
    from timeline_nesting import nesting_errors, timeline_events

    from mindspeed_prof.analysis.timeline import build as timeline

    write = timeline._write  # every timeline is written through it, whoever asks

    def checked(out: Path, *args: Any, **kwargs: Any) -> Any:
        written = write(out, *args, **kwargs)
        fmt = kwargs.get("fmt", args[3] if len(args) > 3 else "json")
        if fmt == "json":
            errors = nesting_errors(timeline_events(out))
            assert not errors, f"{out}: slices not nested: {errors}"
        return written

    monkeypatch.setattr(timeline, "_write", checked)


APP = textwrap.dedent("""
    import os, sys, time
    import hydra
    from omegaconf import DictConfig
    import mindspeed_prof

    @hydra.main(version_base=None, config_path=".", config_name="config")
    def main(cfg: DictConfig) -> None:
        import torch
        print("TASK BODY RAN")
        prof = mindspeed_prof.current()
        for step in range(1, cfg.steps + 1):
            with prof.step(step):
                for stage in cfg.stages:
                    with prof.stage(stage):
                        torch.randn(16, 16) @ torch.randn(16, 16)
                        if cfg.fail_at == step and stage == cfg.stages[-1]:
                            raise RuntimeError("boom in " + stage)
                if cfg.exit_at == step:
                    sys.exit(3)
        print("TASK DONE")

    if __name__ == "__main__":
        main()
""")

CONFIG = textwrap.dedent("""
    defaults:
      - profiler_config: none
      - _self_
    steps: 4
    stages: [actor_generate, actor_update, critic_update]
    fail_at: 0
    exit_at: 0
""")


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A small Hydra app in a temp dir: the tested package and plugin, no other repo file."""
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "config.yaml").write_text(CONFIG)
    return tmp_path


@pytest.fixture(scope="session", params=["verl==0.9.0", "verl==0.9.1"])
def verl_release(
    request: pytest.FixtureRequest, verl_tree: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """Each release the clients tests run on, and its config tree (the pin's is ``verl_tree``)."""
    from verl_wheel import PINNED, download_config_tree

    if request.param == PINNED:
        return request.param, verl_tree
    got = download_config_tree(tmp_path_factory.mktemp("verl"), request.param)
    if isinstance(got, str):
        pytest.skip(f"SKIP: cannot download {request.param} ({got})")
    return request.param, got


@pytest.fixture(scope="session")
def verl_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """verl's real config tree (``verl/trainer/config``) from its wheel, downloaded once."""
    from verl_wheel import PINNED, download_config_tree

    got = download_config_tree(tmp_path_factory.mktemp("verl"))
    if isinstance(got, str):
        pytest.skip(f"SKIP: cannot download {PINNED} ({got})")
    return got


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the whole test session, shut down at the end. A start that
    fails is tried again (``ray_start.TRIES`` in all); then every test using it fails with
    the same one line."""
    from ray_start import start

    ray = pytest.importorskip("ray")
    # a loaded machine starts a raylet in more than Ray's default 10 s wait
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "60")
    why = start(
        lambda: ray.init(
            num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False
        ),
        ray.shutdown,
    )
    if why:
        pytest.fail(why, pytrace=False)
    yield ray
    ray.shutdown()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its reliability counts to the controller."""
    from helpers import COUNTS

    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["counts"] = dict(COUNTS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller adds up its workers' counts (xdist only)."""
    from helpers import COUNTS

    for what, n in getattr(node, "workeroutput", {}).get("counts", {}).items():
        COUNTS[what] = COUNTS.get(what, 0) + n


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from helpers import COUNTS

    terminalreporter.write_line(_replay(terminalreporter.config))

    if COUNTS:
        terminalreporter.section("reliability counts")
        for what, n in sorted(COUNTS.items()):
            terminalreporter.write_line(f"{what}: {n}")


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The analysis tests' shared run: two ranks, three steps, rank 1 slow in actor_update
    (+90 ms on the fake clock, every step: a straggler whatever the machine's load)."""
    return make_run(tmp_path_factory.mktemp("run"), slow={(1, "actor_update"): 3})
