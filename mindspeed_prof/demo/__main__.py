"""``python -m mindspeed_prof.demo [overrides]``: the demo RL trainer as a Hydra app.

Whatever stops it before training is one line: a knob (``demo.*``) the demo has not or a
value it cannot take (checked before Hydra starts), and anything Hydra rejects (an override of
a key the config has not, a bad value's type), said here rather than as Hydra's several lines
and its ``HYDRA_FULL_ERROR`` hint.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import hydra
from omegaconf import DictConfig

__all__ = ["app", "main"]

PREFIX = "mindspeed-prof demo"


@hydra.main(version_base=None, config_path="../conf", config_name="demo")
def app(cfg: DictConfig) -> None:
    from mindspeed_prof.demo.trainer import train

    train(cfg)


def main() -> None:
    """The app, with its command line (``sys.argv``) checked first and errors in one line."""
    line = knob_problem(sys.argv[1:])
    if line:
        raise SystemExit(f"{PREFIX}: {line}")
    with one_line_errors():
        app()


def knob_problem(args: list[str]) -> str | None:
    """The first ``demo.<knob>=`` override of ``args`` the demo cannot take (each value of a
    sweep), over the knobs' values in ``conf/demo.yaml``; None when all can be taken, or the
    line is not Hydra's to parse (Hydra says why)."""
    from hydra._internal.utils import get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from mindspeed_prof.demo.knobs import problem

    try:
        parsed = get_args_parser().parse_args(args)
        overrides = OverridesParser.create().parse_overrides(parsed.overrides)
    except (SystemExit, HydraException):
        return None
    knobs = [o for o in overrides if o.key_or_group.startswith("demo.") and not o.is_delete()]
    base = _yaml_knobs()
    base.update(
        {o.key_or_group[5:]: o.value() for o in knobs if not o.is_sweep_override()}
    )  # the values of a sweep: each over the rest
    tries: list[dict[str, object]] = [base]
    for o in knobs:
        if o.is_sweep_override():
            try:
                tries += [{**base, o.key_or_group[5:]: v} for v in o.sweep_iterator()]
            except HydraException:  # a sweep of a kind with no list of values (glob)
                continue
    return next((line for knob in tries if (line := problem(knob))), None)


def _yaml_knobs() -> dict[str, object]:
    from importlib.resources import files

    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(OmegaConf.load(str(files("mindspeed_prof.conf") / "demo.yaml")))
    demo = plain.get("demo") if isinstance(plain, dict) else None
    return {str(k): v for k, v in demo.items()} if isinstance(demo, dict) else {}


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Hydra's composition errors as one line (``SystemExit``). Hydra re-raises them under
    ``HYDRA_FULL_ERROR``, set for the while; what the task raises goes on as it is."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    before = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    except (HydraException, OmegaConfBaseException) as err:
        raise SystemExit(f"{PREFIX}: {one_line(err)}") from None
    finally:
        if before is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = before


def one_line(err: BaseException) -> str:
    """Hydra's message and its cause's, first lines only, without Hydra's advice to add a key
    with ``+`` (the key is misspelt far more often than missing)."""
    lines = [
        next((x.strip() for x in str(e).splitlines() if x.strip()), type(e).__name__)
        for e in (err, err.__cause__)
        if e is not None
    ]
    first = lines[0]
    if first.startswith("Could not override '") and len(lines) > 1:
        key = first.split("'")[1]
        return f"{key}: no such key in the demo's config ({lines[1]}); mindspeed-prof demo --help"
    return "; ".join(dict.fromkeys(lines))


if __name__ == "__main__":
    main()
