"""The JSON that ``--json`` and the summary files write: ``Json`` is any JSON value,
``JsonObject`` one object (read-only views, so that a ``list[int]`` is a ``Json`` too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Union

__all__ = ["Json", "JsonObject"]

Json = Union[None, bool, int, float, str, Sequence["Json"], Mapping[str, "Json"]]
JsonObject = dict[str, Json]
