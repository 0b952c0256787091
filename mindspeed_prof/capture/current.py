"""The process's current profilers, one per role, kept apart so that setting one imports nothing.

The one rule for reaching a profiler one did not make (the Hydra callback's, say): ``current()``
(``get_current``). ``Profiler.from_config`` always builds; the Hydra job's profiler is noted
here only so that a second one built beside it is said."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Kept", "discard", "get_current", "job_profiler", "set_current", "set_job_profiler"]


class Kept(Protocol):
    """A profiler as kept here (a ``capture.profiler.Profiler``: this module imports none)."""

    @property
    def role(self) -> str: ...


_by_role: dict[str, Kept] = {}
_latest: list[Kept] = []  # most recent last
_job: list[Kept] = []  # the Hydra job's profiler (the callback's), while its job runs


def set_current(profiler: Kept | None) -> None:
    """Make ``profiler`` current for its role (and for ``current()``); ``None`` clears all."""
    if profiler is None:
        _by_role.clear()
        _latest.clear()
        return
    previous = _by_role.get(profiler.role)
    if previous is not None:
        discard(previous)
    _by_role[profiler.role] = profiler
    _latest.append(profiler)


def discard(profiler: Kept) -> None:
    """Forget ``profiler`` (it closed); the role's slot empties, ``current()`` falls back."""
    role = profiler.role
    if _by_role.get(role) is profiler:
        del _by_role[role]
    _latest[:] = [p for p in _latest if p is not profiler]


def get_current(role: str | None = None) -> Kept | None:
    """The current profiler of ``role``, or with no role the one made most recently."""
    if role is not None:
        return _by_role.get(role)
    return _latest[-1] if _latest else None


def set_job_profiler(profiler: Kept | None) -> None:
    """The Hydra callback's profiler for the job now running (``None``: no job's)."""
    _job[:] = [] if profiler is None else [profiler]


def job_profiler() -> Kept | None:
    """The running Hydra job's profiler, or None (``from_config`` warns of a second one)."""
    return _job[0] if _job else None
