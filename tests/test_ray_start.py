"""The Ray cluster fixture's start: retried a bounded number of times, then one line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from ray_start import TRIES, start


class Flaky:
    """``init`` failing its first ``fails`` calls, as Ray does when its raylet is slow."""

    def __init__(self, fails: int) -> None:
        self.fails, self.calls, self.shutdowns = fails, 0, 0
        self.pauses: list[float] = []

    def init(self) -> None:
        self.calls += 1
        if self.calls <= self.fails:
            raise RuntimeError(
                "Failed to get node info b'GCS cannot find the node'\n"
                "The node registration may not be complete yet."
            )

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_slow_start_is_tried_again_with_a_growing_pause() -> None:
    ray = Flaky(fails=TRIES - 1)
    assert start(ray.init, ray.shutdown, pause_s=2.0, sleep=ray.pauses.append) == ""
    assert (ray.calls, ray.shutdowns) == (TRIES, TRIES - 1)
    assert ray.pauses == [2.0 * 2**i for i in range(TRIES - 1)]


def test_a_start_that_never_comes_is_one_line_after_a_bounded_number_of_tries() -> None:
    ray = Flaky(fails=100)
    why = start(ray.init, ray.shutdown, sleep=ray.pauses.append)
    assert why == (
        f"no Ray cluster after {TRIES} tries (RuntimeError: Failed to get node info "
        "b'GCS cannot find the node')"
    )
    assert ray.calls == ray.shutdowns == TRIES and len(ray.pauses) == TRIES - 1


def test_tests_using_a_cluster_that_cannot_start_each_fail_with_that_one_line(
    tmp_path: Path,
) -> None:
    """The fixture itself, in a pytest run where Ray cannot start: every test using it
    fails with the one line, none with a traceback."""
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""
        import sys, types
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        ray = types.ModuleType("ray")
        def init(**_):
            with open("tries", "a") as f:
                f.write("x")
            raise TimeoutError("Timed out after 60 s waiting for the raylet\\nmore")
        ray.init, ray.shutdown = init, lambda: None
        sys.modules["ray"] = ray
        import ray_start
        ray_start.PAUSE_S = 0.0
        from conftest_ray import ray_cluster  # noqa: F401
    """)
    )
    source = (Path(__file__).parent / "conftest.py").read_text()
    fixture = source[source.index('@pytest.fixture(scope="session")\ndef ray_cluster') :]
    fixture = fixture[: fixture.index("\n\n\n")]
    (tmp_path / "conftest_ray.py").write_text("import os\nimport pytest\n\n" + fixture + "\n")
    (tmp_path / "test_x.py").write_text(
        "".join(f"def test_{i}(ray_cluster):\n    pass\n" for i in range(3))
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    line = (
        f"no Ray cluster after {TRIES} tries (TimeoutError: Timed out after 60 s waiting "
        "for the raylet)"
    )
    errors = proc.stdout.split("== ERRORS ==")[1].split("== short test summary")[0]
    lines = [text for text in errors.strip().splitlines() if not text.startswith(("_", "="))]
    assert lines == [line] * 3 and errors.count("ERROR at setup of") == 3, proc.stdout
    assert "3 errors" in proc.stdout
    assert (tmp_path / "tries").read_text() == "x" * TRIES  # started once for the session
