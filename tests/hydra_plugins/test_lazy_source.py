"""The plugin's config source builds nothing for an app that does not use its groups."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

APP = textwrap.dedent("""
    import sys
    import hydra

    @hydra.main(version_base=None, config_path=".", config_name="config")
    def main(cfg):
        loaded = [m for m in ("mindspeed_prof.config.schema", "mindspeed_prof.config.presets")
                  if m in sys.modules]
        print("LOADED", loaded, "PROFILER" if "profiler_config" in cfg else "")

    main()
""")


def run(tmp_path: Path, config: str) -> str:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "config.yaml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYDRA_")}
    proc = subprocess.run(
        [sys.executable, "app.py", "hydra.run.dir=.", "hydra.output_subdir=null"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_plain_app_builds_no_presets(tmp_path: Path) -> None:
    assert "LOADED []" in run(tmp_path, "x: 1\n")


def test_app_using_a_preset_gets_it(tmp_path: Path) -> None:
    out = run(tmp_path, "defaults:\n  - profiler: none\n  - _self_\n")
    assert "'mindspeed_prof.config.presets'" in out and "PROFILER" in out
