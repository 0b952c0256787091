#!/usr/bin/env python3
"""Screenshots of the HTML report at the widths people read it at, for a person to look at.

    python scripts/report_screenshots.py CAPTURES [-o DIR] [--widths 1280 800]
    python scripts/report_screenshots.py REPORT.html [-o DIR]

CAPTURES (anything ``mindspeed-prof analyse`` reads) is analysed into DIR/report.html first;
an ``.html`` file is shot as it is. For each width, headless Chromium lays the page out, the
page's full height is measured, and DIR/report-WIDTH.png holds the whole page at that width.
DIR defaults to ``report-screenshots``. Needs Chromium (Debian: ``apt-get install -y
chromium``; elsewhere set ``CHROMIUM`` to the browser's path); it runs offline, the report
loads nothing.

``tests/views/test_html_browser.py`` drives the same browser, with the same flags, through
``find_chromium`` and ``dump_dom``.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Where to look for the browser, in order (``CHROMIUM`` first when set).
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Headless, offline, no sandbox (CI runs as root), no GPU, nothing from the user's profile.
FLAGS = (
    "--headless=new",
    "--disable-gpu",
    "--no-sandbox",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--mute-audio",
    "--no-default-browser-check",
)
INSTALL = "apt-get install -y chromium"
TIMEOUT_S = 120
_HEIGHT = re.compile(r"<pre id=\"page-height\">(\d+)</pre>")
_MEASURE = (
    "<script>(function(){var p=document.createElement('pre');p.id='page-height';"
    "p.textContent=String(Math.ceil(document.documentElement.scrollHeight));"
    "document.body.appendChild(p);})();</script>"
)


def find_chromium() -> str | None:
    """The browser's path (``CHROMIUM``, else the first of ``NAMES`` on PATH), or None."""
    given = os.environ.get("CHROMIUM")
    if given:
        return shutil.which(given) or (given if Path(given).is_file() else None)
    return next((p for p in map(shutil.which, NAMES) if p), None)


def missing() -> str:
    """One line: what is missing and how to install it."""
    return (
        f"chromium not found (looked for $CHROMIUM, {', '.join(NAMES)}): {INSTALL}, or "
        "set CHROMIUM to a Chromium or Chrome binary"
    )


def _run(browser: str, page: Path, width: int, height: int, *extra: str) -> str:
    with tempfile.TemporaryDirectory(prefix="report-browser-") as profile:
        proc = subprocess.run(
            [
                browser,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--virtual-time-budget=2000",
                *extra,
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{browser} exited {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
        )
    return proc.stdout


def dump_dom(browser: str, page: Path, width: int, height: int = 900) -> str:
    """The DOM of ``page`` after its scripts ran, laid out in a ``width`` x ``height`` window."""
    return _run(browser, page, width, height, "--dump-dom")


def page_height(browser: str, page: Path, width: int) -> int:
    """The height of ``page`` laid out ``width`` wide (a copy of it measures itself)."""
    with tempfile.TemporaryDirectory(prefix="report-height-") as tmp:
        copy = Path(tmp) / page.name
        text = page.read_text(encoding="utf-8")
        copy.write_text(text.replace("</body>", _MEASURE + "</body>", 1), encoding="utf-8")
        found = _HEIGHT.search(dump_dom(browser, copy, width))
    if not found:
        raise RuntimeError(f"{page}: the page did not report its height")
    return int(html.unescape(found.group(1)))


def screenshot(browser: str, page: Path, png: Path, width: int, most: int = 16000) -> Path:
    """``page`` whole (up to ``most`` pixels tall), ``width`` wide, as the PNG ``png``."""
    height = min(max(page_height(browser, page, width), 200), most)
    png.parent.mkdir(parents=True, exist_ok=True)
    _run(browser, page, width, height, "--hide-scrollbars", f"--screenshot={png.resolve()}")
    if not png.is_file():
        raise RuntimeError(f"{browser} wrote no {png}")
    return png


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="captures to analyse, or a report (.html)")
    ap.add_argument(
        "-o",
        "--out",
        type=Path,
        default=Path("report-screenshots"),
        help="folder for report.html and the PNGs",
    )
    ap.add_argument("--widths", type=int, nargs="+", default=[1280, 800])
    args = ap.parse_args(argv)
    browser = find_chromium()
    if browser is None:
        print(missing(), file=sys.stderr)
        return 2
    page = args.source
    if page.suffix != ".html":
        from mindspeed_prof.cli import main as cli

        page = args.out / "report.html"
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # the tables
            code = cli(["analyse", str(args.source), "--html", str(page)])
        if not page.is_file():
            return code or 1
    for width in args.widths:
        print(screenshot(browser, page, args.out / f"report-{width}.png", width))
    return 0


if __name__ == "__main__":
    sys.exit(main())
