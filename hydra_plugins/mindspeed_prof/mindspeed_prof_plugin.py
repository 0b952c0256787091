"""Hydra discovers this module: it registers the ``profiler`` presets and the YAML search path."""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from mindspeed_prof.config.presets import register

__all__ = ["MindspeedProfSearchPathPlugin"]

register()


class MindspeedProfSearchPathPlugin(SearchPathPlugin):
    """Adds ``pkg://mindspeed_prof.conf`` (callback option, ``profiler_sweep`` group)."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="mindspeed-prof", path="pkg://mindspeed_prof.conf")
