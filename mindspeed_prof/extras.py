"""How to install one of mindspeed-prof's extras, the way this copy was installed: from the
package index (``pip install 'mindspeed-prof[tensorboard]'``), or from a clone (``pip install
'.[tensorboard]'`` in it, its path elsewhere), as pip's ``direct_url.json`` records."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["install_line", "installed_from", "line_for"]

DIST = "mindspeed-prof"


def installed_from() -> Path | None:
    """The folder this copy was installed from (a clone), or None (the index, or unknown)."""
    from importlib import metadata

    try:  # the install's record; a clone's own *.egg-info, found first from it, has none
        texts = [d.read_text("direct_url.json") for d in metadata.distributions(name=DIST)]
        record = next((json.loads(t) for t in texts if t), None)
    except (ValueError, OSError):
        return None
    if not isinstance(record, dict) or "dir_info" not in record:
        return None  # the index, an archive or a VCS URL: the index's name is the way
    url = urlparse(str(record.get("url", "")))
    return Path(unquote(url.path)) if url.scheme == "file" and url.path else None


def install_line(extra: str, cwd: Path | None = None) -> str:
    """``pip install ...[extra]`` for this copy (see ``line_for``)."""
    return line_for(extra, installed_from(), cwd)


def line_for(extra: str, source: Path | None, cwd: Path | None = None) -> str:
    """``pip install ...[extra]`` from ``source``, the folder a copy came from (``.`` when that
    is ``cwd``, default the current folder), or from the index (``source`` None)."""
    if source is None:
        target = DIST
    else:
        here = (cwd or Path.cwd()).resolve()
        target = "." if source.resolve() == here else str(source)
    return f"pip install {shlex.quote(f'{target}[{extra}]')}"
