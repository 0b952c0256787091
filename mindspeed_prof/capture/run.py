"""This job's run id: how every rank of one job comes to use the same one.

The first of these that answers gives it (``resolve``):

1. ``given``: passed in (``Profiler(run=...)``); a Ray worker built with ``ray.worker_config``
   gets its driver's this way, so every role and rank of a Ray job shares the driver's id;
2. ``env``: ``MINDSPEED_PROF_RUN``, set by a launcher for all its ranks (any safe name, such
   as ``slurm-$SLURM_JOB_ID``), or exported by a parent process that made the id;
3. ``torchrun``: ``torchrun --standalone`` gives each launch a fresh uuid
   (``TORCHELASTIC_RUN_ID``); a restart of it (``TORCHELASTIC_RESTART_COUNT``) is a new run;
4. ``process group``: torch.distributed is initialised: the first rank to ask puts a new id in
   the process group's store (``compare_set``), the others read it: one round trip, no
   collective, no rank waits for another;
5. ``process``: a new id.

An id from 4 or 5 is exported as ``MINDSPEED_PROF_RUN``, so that processes this one starts from
now on (spawned ranks, a reward pool) share it.

A profiler resolves its id when it first needs it (its first capture, or the Hydra callback's
manifest), so a rank that initialises torch.distributed before then agrees through the store.
Ranks that share none of these (separate processes, no launcher variable, the id needed before
torch.distributed is up) each get their own id: set ``MINDSPEED_PROF_RUN`` in the launcher.
"""

from __future__ import annotations

import os
import re
import sys

from mindspeed_prof.formats.run import RUN_ENV, new_run_id, valid_run_id

__all__ = ["KEY", "new_job", "resolve", "start_job"]

#: The key the run id is kept under in torch.distributed's store.
KEY = "mindspeed_prof/run"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: The id this process exported, which a new job in this process must not reuse, and the
#: variable's value before (None: unset).
_exported: str | None = None
_outside: str | None = None


def resolve(given: str | None = None) -> tuple[str, str]:
    """``(run id, how it was agreed)``: ``given``, ``env``, ``torchrun``, ``process group`` or
    ``process`` (see the module's doc)."""
    if valid_run_id(given):
        return str(given), "given"
    env = os.environ.get(RUN_ENV, "")
    if valid_run_id(env):
        return env, "env"
    elastic = _torchrun()
    if elastic:
        return elastic, "torchrun"
    agreed = _from_store()
    if agreed:
        return _export(agreed), "process group"
    return _export(new_run_id()), "process"


def start_job(num: int | None = None) -> tuple[str, str]:
    """A Hydra job starts in this process: its ``(run id, how)``. Hydra runs a multirun's jobs
    one after another in one process, so the id exported for the last job is dropped first
    (``new_job``); an id every job would share (``env``, ``torchrun``) gets ``-job<num>`` in a
    multirun, so that no two jobs of a sweep are one run."""
    new_job()
    run, how = resolve()
    if num is not None and how in ("env", "torchrun"):
        run = _export(f"{run[:56]}-job{num}")
    return run, how


def new_job() -> None:
    """Forget the id this process exported: the variable is as it was before (an id set from
    outside stays), and the next ``resolve`` answers for a new job."""
    global _exported, _outside
    if _exported is not None and os.environ.get(RUN_ENV) == _exported:
        if _outside is None:
            del os.environ[RUN_ENV]
        else:
            os.environ[RUN_ENV] = _outside
    _exported = _outside = None


def _export(run: str) -> str:
    global _exported, _outside
    if _exported is None:
        _outside = os.environ.get(RUN_ENV)
    os.environ[RUN_ENV] = _exported = run
    return run


def _torchrun() -> str | None:
    """``torchrun-<uuid head>[-r<restart>]`` under ``torchrun --standalone`` (its rendezvous id
    is a fresh uuid; an id given with ``--rdzv-id`` may be reused by the next job: not used)."""
    rdzv = os.environ.get("TORCHELASTIC_RUN_ID", "").lower()
    if not _UUID.match(rdzv):
        return None
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    suffix = f"-r{restart}" if restart.isdigit() and int(restart) > 0 else ""
    return f"torchrun-{rdzv.replace('-', '')[:12]}{suffix}"


def _from_store() -> str | None:
    """The id in the default process group's store, put there by whichever rank asked first;
    None when torch.distributed is not initialised (or its store cannot be asked)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not (dist.is_available() and dist.is_initialized()):
            return None
        from torch.distributed import distributed_c10d

        store = distributed_c10d._get_default_store()
        value = store.compare_set(KEY, "", new_run_id()).decode()
    except Exception:  # noqa: BLE001 - a store that cannot answer: decided otherwise
        return None
    return value if valid_run_id(value) else None
