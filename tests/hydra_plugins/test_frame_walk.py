"""The config source finds its siblings up the call stack (the plugin module says why): pinned
to the hydra-core versions it was checked on, and asked through each repository entry point."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import hydra
import pytest
from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
from hydra._internal.config_search_path_impl import ConfigSearchPathImpl
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from packaging.requirements import Requirement
from packaging.version import Version

from hydra_plugins.mindspeed_prof.mindspeed_prof_plugin import (
    CHECKED_HYDRA,
    MindspeedProfConfigSource,
)

ROOT = Path(__file__).resolve().parents[2]


def _allowed() -> Requirement:
    """pyproject's hydra-core requirement."""
    (spec,) = re.findall(r'"(hydra-core[^"]*)"', (ROOT / "pyproject.toml").read_text())
    return Requirement(spec)


@pytest.mark.parametrize("version", CHECKED_HYDRA)
def test_each_checked_version_is_one_the_project_allows(version: str) -> None:
    assert Version(version) in _allowed().specifier


def test_the_installed_hydra_is_one_the_walk_was_checked_on() -> None:
    """A hydra-core release past these: read its ``ConfigRepository`` (the walk needs each
    question to a source asked from its methods, its ``sources`` holding the source), then add
    it to ``CHECKED_HYDRA``."""
    assert hydra.__version__ in CHECKED_HYDRA, hydra.__version__
    assert set(CHECKED_HYDRA) == {v for v in CHECKED_HYDRA if Version(v) in _allowed().specifier}


Ask = Callable[[ConfigRepository | CachingConfigRepository], object]
QUESTIONS: dict[str, Ask] = {
    "group_exists": lambda repo: repo.group_exists("profiler"),
    "config_exists": lambda repo: repo.config_exists("profiler/theirs"),
    "load_config": lambda repo: repo.load_config("profiler/theirs"),
    "get_group_options": lambda repo: repo.get_group_options("profiler", ObjectType.CONFIG),
}


@pytest.mark.parametrize("caching", [False, True], ids=["repository", "caching"])
@pytest.mark.parametrize("question", list(QUESTIONS))
def test_each_repository_question_finds_the_other_sources(
    tmp_path: Path, question: str, caching: bool
) -> None:
    """Ours first on the path, the other tree (as ``hydra.searchpath`` adds it) after: the
    source learns of the other's ``profiler`` group only from the repository asking."""
    other = tmp_path / "other"
    (other / "profiler").mkdir(parents=True)
    (other / "profiler" / "theirs.yaml").write_text("x: 1\n")
    Plugins.instance()  # registers the config sources, ours among them
    path = ConfigSearchPathImpl()
    path.append("mindspeed-prof", "mindspeed-prof://presets")
    path.append("other", f"file://{other}")
    assert MindspeedProfConfigSource.search_path is None  # no fallback to hide a failed walk
    base = ConfigRepository(path)
    repo = CachingConfigRepository(base) if caching else base
    (ours,) = [s for s in repo.get_sources() if isinstance(s, MindspeedProfConfigSource)]
    QUESTIONS[question](repo)
    assert ours._alias_free is False  # asked, and answered from the repository's sources


def test_the_frames_the_source_reads_are_where_it_looks() -> None:
    """What the walks read of hydra-core's own code, in the installed version: the reporter
    ``run_and_report`` (a line there is a ``SystemExit``), ``Overrides.__init__``'s loop variable
    ``override``, ``create_defaults_list``'s ``repo`` and ``config_name``, and the repository's
    ``sources``. Any other shape: the walk finds nothing and the plugin's lines are lost."""
    import inspect

    from hydra._internal import defaults_list, utils

    assert "run_and_report" in vars(utils)
    assert re.search(r"for override in \w+", inspect.getsource(defaults_list.Overrides.__init__))
    assert {"repo", "config_name"} <= set(
        inspect.signature(defaults_list.create_defaults_list).parameters
    )
    assert "self.sources = []" in inspect.getsource(ConfigRepository.initialize_sources)
    assert "self.sources" in inspect.getsource(ConfigRepository.get_sources)
