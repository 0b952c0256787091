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
never lists the alias. A name that is no preset gets one line with the closest one.
"""

from __future__ import annotations

import sys
from typing import Any

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin

__all__ = ["MindspeedProfConfigSource", "MindspeedProfSearchPath"]

#: The presets' group (the key it fills) and its other spelling (an alias where free).
GROUP, ALIAS = "profiler_config", "profiler"
#: Where the alias finds the presets (not listed; see ``presets.HIDDEN``).
HIDDEN = "mindspeed_prof/preset"
#: The config groups the source serves; any other path is answered without building anything.
GROUPS = frozenset({"mindspeed_prof", GROUP, ALIAS, "profiler_sweep"})


class MindspeedProfSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="mindspeed-prof", path="mindspeed-prof://presets")
        MindspeedProfConfigSource.search_path = search_path  # its sources made right after


class MindspeedProfConfigSource(ConfigSource):
    """``mindspeed_prof.config.presets.configs()`` as a config source, built on first use."""

    _configs: dict[str, tuple[Any, str | None]] | None = None
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
    def _built(cls) -> dict[str, tuple[Any, str | None]]:
        if cls._configs is None:
            from omegaconf import OmegaConf

            from mindspeed_prof.config.presets import configs

            cls._configs = {
                f"{group}/{name}": (node if OmegaConf.is_config(node) else OmegaConf.create(node),
                                    package)
                for group, name, node, package in configs()}
        return cls._configs

    def _serve(self, key: str) -> tuple[Any, str | None]:
        """The node and package of ``group/name``, as this app sees them; raises one line
        (a composition error) for a preset name that is none, or that another tree owns."""
        from hydra.errors import ConfigCompositionException

        from mindspeed_prof.config import presets

        group, _, name = key.rpartition("/")
        if group not in (GROUP, ALIAS):  # a preset's body, the callback, the sweep
            return self._built()[f"{GROUP}/{name}" if group == HIDDEN else key]
        if group == ALIAS and not self.alias_free():
            raise ConfigCompositionException(presets.alias_taken_line(name))
        if f"{GROUP}/{name}" not in self._built():
            raise ConfigCompositionException(presets.unknown_preset_line(group, name))
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
        """The app's other config sources: those of the repository asking (found up the call
        stack: Hydra gives a source no handle on its siblings, and the repository that
        composes holds ``hydra.searchpath``'s entries too), else made from the search path the
        plugin saw."""
        frame = sys._getframe(1)
        while frame is not None:
            sources = getattr(frame.f_locals.get("self"), "sources", None)
            if isinstance(sources, list) and any(s is self for s in sources):
                return [s for s in sources if not isinstance(s, MindspeedProfConfigSource)]
            frame = frame.f_back  # type: ignore[assignment]
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
            return key if f"{GROUP}/{name}" in self._built() else None
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
        return ConfigResult(config=node.copy(), path=f"{self.scheme()}://{self.path}",
                            provider=self.provider, header={"package": package})

    def available(self) -> bool:
        return True

    def is_group(self, config_path: str) -> bool:
        path = config_path.strip("/")
        if path == ALIAS:
            return self.alias_free()
        return path == "" or path in GROUPS  # "": the root, where --help starts listing

    def is_config(self, config_path: str) -> bool:
        return self._key(config_path) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        path = config_path.strip("/")
        if path == "":  # --help lists groups from here: the alias is not shown
            return sorted(GROUPS - {ALIAS}) if results_filter in (None, ObjectType.GROUP) else []
        if not self.is_group(path) or results_filter == ObjectType.GROUP:
            return []
        group = GROUP if path == ALIAS else path
        return sorted(k.split("/", 1)[1] for k in self._built() if k.startswith(group + "/"))


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
