"""Hydra imports this module at every app's start: it adds the ``mindspeed-prof://`` config
source, which serves the ``profiler_config`` presets, the callback option and the
``profiler_sweep`` group. The configs are built on first use of one of those groups, so an app
that does not use them pays only for this module (no torch, ray, torch_npu, nor mindspeed_prof
imported here).

``profiler=<preset>`` (the mission's spelling) selects a preset too: each preset carries an
entry of the ``profiler`` group in its defaults list, which the command line's ``profiler=x``
sets (see ``mindspeed_prof.config.presets.dispatcher``). Where another source on the
app's search path has a ``profiler`` group (verl's config tree), that group is theirs:
``profiler=<our preset>`` gets one line naming ``profiler_config=<preset>``, and ``--help``
lists the alias only where it is ours. A name that is no preset gets one line with the closest
one; the design card's names (``stage-scoped``) are read as the presets they name.

Overrides Hydra would reject badly get one line too: ``profiler_config=null`` (Hydra: a
traceback) and a misspelt group or key (``profilr=full``: Hydra suggests ``+profilr=full``).
Hydra asks every source whether each override's key is a group, from ``Overrides.__init__``
(its loop's ``override`` at hand) inside ``create_defaults_list`` (the primary config's name at
hand); the source reads both from those frames. Inside ``@hydra.main`` such a line is a
``SystemExit``: Hydra adds a ``HYDRA_FULL_ERROR`` hint to any exception it reports.

Whether ``profiler`` is free needs the app's other config sources. Hydra hands a source only
``(provider, path)``; a ``SearchPathPlugin`` sees the search path before the primary config's
``hydra.searchpath`` entries are added, and those entries live only in the ``ConfigRepository``
that composes (a copy per composition, with sources made anew). No plugin kind, nor
``Plugins.instance()`` or ``GlobalHydra``, reaches that repository, so the source finds it up
the call stack: the nearest frame whose ``self`` is a ``ConfigRepository`` holding this source
(every question Hydra asks a source comes from one of its methods). That code is the same in
every hydra-core the project allows (1.3.0 to 1.3.8, checked against their sources);
``CHECKED_HYDRA`` lists them, and tests/hydra_plugins/test_frame_walk.py fails on any other
version and asks each repository entry point through the walk. Outside a composition (no such
frame), the sources are made from the search path the plugin last saw.
"""

from __future__ import annotations

import difflib
import sys
from typing import TYPE_CHECKING, NoReturn

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin

if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import FrameType

    from hydra.core.override_parser.types import Override
    from omegaconf import DictConfig

__all__ = ["CHECKED_HYDRA", "MindspeedProfConfigSource", "MindspeedProfSearchPath"]

#: The hydra-core versions whose ``ConfigRepository`` the frame walk was checked against.
CHECKED_HYDRA = ("1.3.0", "1.3.1", "1.3.2", "1.3.3", "1.3.4", "1.3.5", "1.3.6", "1.3.7", "1.3.8")

#: The presets' group (the key it fills) and its other spelling (an alias where free).
GROUP, ALIAS = "profiler_config", "profiler"
#: Where the alias finds the presets (not listed; see ``presets.HIDDEN``).
HIDDEN = "mindspeed_prof/preset"
#: The config groups the source serves; any other path is answered without building anything.
GROUPS = frozenset({"mindspeed_prof", GROUP, ALIAS, "profiler_sweep"})
#: The groups people type (``mindspeed_prof`` holds the callback: not listed, not suggested).
TYPED = (GROUP, ALIAS, "profiler_sweep")
#: How close a key must be to one of ``TYPED`` to be read as a misspelling of it; and to
#: ``profiler_config`` where a section of it follows (``profilr_config.integrated.stage``).
CLOSE, CLOSE_SECTION = 0.8, 0.6


class MindspeedProfSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="mindspeed-prof", path="mindspeed-prof://presets")
        MindspeedProfConfigSource.search_path = search_path  # its sources made right after


class MindspeedProfConfigSource(ConfigSource):
    """``mindspeed_prof.config.presets.configs()`` as a config source, built on first use."""

    _configs: dict[str, tuple[DictConfig, str | None]] | None = None
    #: The search path the plugin last added this source to.
    search_path: ConfigSearchPath | None = None

    def __init__(self, provider: str, path: str) -> None:
        super().__init__(provider=provider, path=path)
        self._search_path = type(self).search_path
        self._alias_free: bool | None = None
        self._theirs: dict[str, bool] = {}  # config key -> whether another source has it

    @staticmethod
    def scheme() -> str:
        return "mindspeed-prof"

    @classmethod
    def _built(cls) -> dict[str, tuple[DictConfig, str | None]]:
        if cls._configs is None:
            from omegaconf import DictConfig, OmegaConf

            from mindspeed_prof.config.presets import configs

            cls._configs = {
                f"{group}/{name}": (
                    node if isinstance(node, DictConfig) else OmegaConf.create(node),
                    package,
                )
                for group, name, node, package in configs()
            }
        return cls._configs

    def _serve(self, key: str) -> tuple[DictConfig, str | None]:
        """The node and package of ``group/name``, as this app sees them; raises one line
        (a composition error) for a preset name that is none, or that another tree owns."""
        from mindspeed_prof.config import presets

        group, _, typed = key.rpartition("/")
        name = presets.canonical(typed) or typed
        if group not in (GROUP, ALIAS):  # a preset's body, the callback, the sweep
            return self._built()[f"{GROUP}/{name}" if group == HIDDEN else key]
        if group == ALIAS and not self.alias_free():
            _fail(presets.alias_taken_line(typed))
        if f"{GROUP}/{name}" not in self._built():
            _fail(presets.unknown_preset_line(group, typed))
        if group == ALIAS:
            return presets.alias_node(name), ALIAS
        return presets.dispatcher(name, alias=self.alias_free()), GROUP

    # -- the alias ----------------------------------------------------------------------------
    def alias_free(self) -> bool:
        """Whether ``profiler`` is ours to serve: no other source has a group of that name."""
        if self._alias_free is None:
            self._alias_free = not any(_has_group(s, ALIAS) for s in self._others())
        return self._alias_free

    def _others(self) -> list[ConfigSource]:
        """The app's other config sources: those of the repository composing (see the module's
        docstring), else made from the search path the plugin saw. Ours are told apart by
        scheme: a second import of this module (a test runner's) makes a second class."""
        from hydra._internal.config_repository import ConfigRepository

        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            repo = frame.f_locals.get("self")
            if isinstance(repo, ConfigRepository) and any(s is self for s in repo.sources):
                return [s for s in repo.sources if s.scheme() != self.scheme()]
            frame = frame.f_back
        return self._from_search_path()

    def _from_search_path(self) -> list[ConfigSource]:
        from hydra._internal.sources_registry import SourcesRegistry

        out = []
        for entry in self._search_path.get_path() if self._search_path is not None else []:
            path, provider = str(entry.path), str(entry.provider)
            scheme = path.split("://", 1)[0] if "://" in path else "file"
            if scheme != self.scheme():
                try:
                    out.append(SourcesRegistry.instance().resolve(scheme)(provider, path))
                except Exception:  # noqa: BLE001 - a source that cannot be made has no groups
                    pass
        return out

    def _key(self, path: str) -> str | None:
        """``group/name`` for a config ``path`` this source answers, or None: any name in the
        preset groups that no other source has (a name that is no preset gets a one-line
        error rather than Hydra's list), the alias only for our preset names where another
        source owns the group, and the configs of our other groups."""
        key = path.strip("/").removesuffix(".yaml")
        group, _, name = key.rpartition("/")
        if group == HIDDEN:
            from mindspeed_prof.config.presets import canonical

            return key if f"{GROUP}/{canonical(name) or name}" in self._built() else None
        if not name or group not in GROUPS:
            return None
        if group in (GROUP, ALIAS):
            if group == ALIAS and not self.alias_free() and f"{GROUP}/{name}" not in self._built():
                return None  # theirs: their options, their message
            return None if self._elsewhere(key) else key
        return key if key in self._built() else None

    def _elsewhere(self, key: str) -> bool:
        """Whether another source of the app has the config ``key`` (asked once per key)."""
        if key not in self._theirs:
            self._theirs[key] = any(_has_config(s, key) for s in self._others())
        return self._theirs[key]

    # -- ConfigSource -------------------------------------------------------------------------
    def load_config(self, config_path: str) -> ConfigResult:
        key = self._key(self._normalize_file_name(config_path))
        if key is None:
            raise ConfigLoadError(f"Config not found: {config_path}")
        node, package = self._serve(key)
        return ConfigResult(
            config=node.copy(),
            path=f"{self.scheme()}://{self.path}",
            provider=self.provider,
            header={"package": package},
        )

    def available(self) -> bool:
        return True

    def is_group(self, config_path: str) -> bool:
        path = config_path.strip("/")
        if path in TYPED or _close(path):  # an override's key, maybe: one Hydra would reject?
            self._check_override(path)
        if path == ALIAS:
            return self.alias_free()
        return path == "" or path in GROUPS  # "": the root, where --help starts listing

    def is_config(self, config_path: str) -> bool:
        return self._key(config_path) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        path = config_path.strip("/")
        if path == "":  # --help lists groups from here: those people type
            shown = [g for g in TYPED if g != ALIAS or self.alias_free()]
            return sorted(shown) if results_filter in (None, ObjectType.GROUP) else []
        if not self.is_group(path) or results_filter == ObjectType.GROUP:
            return []
        group = GROUP if path == ALIAS else path
        return sorted(k.split("/", 1)[1] for k in self._built() if k.startswith(group + "/"))

    # -- overrides Hydra would reject badly ---------------------------------------------------
    def _check_override(self, path: str) -> None:
        """One line (``_fail``) where the command line's override of key ``path`` is one Hydra
        would reject with a traceback (a group given no name) or with advice that misleads (a
        key close to one of our groups, that neither the app's primary config nor another
        source has); nothing otherwise, or when Hydra is asking for another reason."""
        override, composing = _asked_for_override()
        if override is None or override.key_or_group != path or override.is_delete():
            return
        value = override.value()
        if path in TYPED:  # a name, a dict, or a list of names (``[1]``: Hydra's TypeError)
            names = value if isinstance(value, list) else [value]
            if not isinstance(value, dict) and not all(isinstance(v, str) and v for v in names):
                from mindspeed_prof.config.presets import not_a_name_line

                _fail(not_a_name_line(path, override.input_line or path))
            return
        top = path.split(".", 1)[0]
        meant = _meant(path, [g for g in TYPED if g != ALIAS or self.alias_free()])
        if meant is None or (override.is_add() and meant != "profiler_sweep"):
            return  # "+key=...": a key added, as asked (only the sweep is used with "+")
        primary = _primary_keys(*composing)
        if primary is None or top in primary or any(_has_group(s, top) for s in self._others()):
            return
        from mindspeed_prof.config.presets import misspelt_line

        _fail(misspelt_line(override.input_line or path, top, meant))


def _close(path: str) -> bool:
    """Whether ``path``'s first key is close to, but none of, the groups people type."""
    return path.split(".", 1)[0] not in GROUPS and _meant(path, TYPED) is not None


def _meant(path: str, names: Iterable[str]) -> str | None:
    """The group ``path``'s first key is a misspelling of, or None. A key with fields under
    it can only mean ``profiler_config``: closer to it than ``CLOSE`` (0.8), or than
    ``CLOSE_SECTION`` (0.6) where the next key is a section of it (``integrated``...)."""
    top, dot, rest = path.partition(".")
    if not dot:
        return _closest(top, names, CLOSE)
    if _closest(top, [GROUP], CLOSE_SECTION) is None:
        return None
    from mindspeed_prof.config.schema import ROLE_ALIASES, SECTIONS

    section = rest.split(".", 1)[0]
    return _closest(top, [GROUP], CLOSE_SECTION if section in {*SECTIONS, *ROLE_ALIASES} else CLOSE)


def _closest(key: str, names: Iterable[str], cutoff: float) -> str | None:
    close = difflib.get_close_matches(key, list(names), n=1, cutoff=cutoff)
    return close[0] if close and close[0] != key else None


def _asked_for_override() -> tuple[Override | None, tuple[object, object]]:
    """The override Hydra is asking about (``Overrides.__init__``'s loop variable), and the
    repository and primary config's name that compose (``create_defaults_list``'s), where
    the question comes from there; else ``(None, (None, None))``."""
    from hydra._internal.defaults_list import Overrides

    frame: FrameType | None = sys._getframe(1)
    override = None
    while frame is not None:
        here = frame.f_locals
        if override is None and frame.f_code.co_name == "__init__":
            if isinstance(here.get("self"), Overrides):
                override = here.get("override")
        elif override is not None and frame.f_code.co_name == "create_defaults_list":
            return override, (here.get("repo"), here.get("config_name"))
        frame = frame.f_back
    return None, (None, None)


def _primary_keys(repo: object, name: object) -> frozenset[str] | None:
    """The top keys of the primary config ``name`` as ``repo`` loads it (no name: none; None
    where it cannot be read, so that nothing is called a typo)."""
    if name is None:
        return frozenset()
    try:
        loaded = repo.load_config(name)  # type: ignore[attr-defined]  # a ConfigRepository
    except Exception:  # noqa: BLE001 - unreadable here: Hydra says why, later
        return None
    return None if loaded is None else frozenset(str(k) for k in loaded.config)


def _fail(line: str) -> NoReturn:
    """Stop composing with ``line``: alone on stderr inside ``@hydra.main`` (a ``SystemExit``,
    which Hydra's reporter lets through), a composition error elsewhere (the compose API)."""
    from hydra.errors import ConfigCompositionException

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if (
            frame.f_code.co_name == "run_and_report"
            and frame.f_globals.get("__name__") == "hydra._internal.utils"
        ):
            raise SystemExit(line)
        frame = frame.f_back
    raise ConfigCompositionException(line)


def _has_group(source: ConfigSource, group: str) -> bool:
    try:
        return bool(source.available() and source.is_group(group))
    except Exception:  # noqa: BLE001 - a source that cannot answer has no such group
        return False


def _has_config(source: ConfigSource, key: str) -> bool:
    try:
        return bool(source.available() and source.is_config(key))
    except Exception:  # noqa: BLE001 - a source that cannot answer has no such config
        return False
