"""Hydra imports this module at every app's start: it adds the ``mindspeed-prof://`` config
source, which serves the ``profiler`` presets, the callback option and the ``profiler_sweep``
group. The configs are built on first use of one of those groups, so an app that does not use
them pays only for this module (no torch, ray, torch_npu, nor mindspeed_prof imported here).
"""

from __future__ import annotations

from typing import Any

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin

__all__ = ["MindspeedProfConfigSource", "MindspeedProfSearchPath"]

#: The config groups the source serves; any other path is answered without building anything.
GROUPS = frozenset({"mindspeed_prof", "profiler", "profiler_sweep"})


class MindspeedProfSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="mindspeed-prof", path="mindspeed-prof://presets")


class MindspeedProfConfigSource(ConfigSource):
    """``mindspeed_prof.config.presets.configs()`` as a config source, built on first use."""

    _configs: dict[str, tuple[Any, str | None]] | None = None

    @staticmethod
    def scheme() -> str:
        return "mindspeed-prof"

    @classmethod
    def _built(cls) -> dict[str, tuple[Any, str | None]]:
        if cls._configs is None:
            from omegaconf import OmegaConf

            from mindspeed_prof.config.presets import configs

            cls._configs = {
                f"{group}/{name}": (OmegaConf.structured(node), package)
                for group, name, node, package in configs()}
        return cls._configs

    def _ours(self, path: str) -> bool:
        return path.strip("/").split("/", 1)[0] in GROUPS

    def load_config(self, config_path: str) -> ConfigResult:
        key = self._normalize_file_name(config_path).strip("/").removesuffix(".yaml")
        found = self._built().get(key) if self._ours(key) else None
        if found is None:
            raise ConfigLoadError(f"Config not found: {config_path}")
        node, package = found
        return ConfigResult(config=node.copy(), path=f"{self.scheme()}://{self.path}",
                            provider=self.provider, header={"package": package})

    def available(self) -> bool:
        return True

    def is_group(self, config_path: str) -> bool:
        path = config_path.strip("/")
        return path == "" or path in GROUPS  # "": the root, where --help starts listing

    def is_config(self, config_path: str) -> bool:
        path = config_path.strip("/").removesuffix(".yaml")
        return self._ours(path) and path in self._built()

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        path = config_path.strip("/")
        if path == "":
            return sorted(GROUPS) if results_filter in (None, ObjectType.GROUP) else []
        if path not in GROUPS or results_filter == ObjectType.GROUP:
            return []
        return sorted(k.split("/", 1)[1] for k in self._built() if k.startswith(path + "/"))
