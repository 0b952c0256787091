"""What every terminal table shares: a title that never wraps, headers that are never cut,
whether a table fits, and short stage codes with their legend when it does not."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

from mindspeed_prof.views.safe import printable

__all__ = ["STAGE_CODES", "codes", "column", "fits", "legend", "table"]

#: Short column names for the RL stages and the transitions, used when full names do not fit
#: (a legend follows).
STAGE_CODES = {
    "actor_generate": "A.gen",
    "actor_compute_log_prob": "A.logp",
    "reference_compute_log_prob": "R.logp",
    "critic_compute_values": "C.vals",
    "actor_update": "A.upd",
    "critic_update": "C.upd",
    "weight_sync": "W.sync",
    "reshard": "reshard",
    "offload": "offload",
    "onload": "onload",
    "engine_sleep": "E.sleep",
    "engine_wake": "E.wake",
}


def table(
    title: str | None = None, *, caption: str | None = None, show_lines: bool = False
) -> Table:
    """A table at least as wide as its title, so the title never wraps word by word."""
    return Table(
        title=title, min_width=len(title) if title else None, caption=caption, show_lines=show_lines
    )


def column(table: Table, header: str, right: bool = True) -> None:
    """A column whose header is never cut: values wrap (or fold) before the header shrinks."""
    table.add_column(
        header, justify="right" if right else "left", min_width=len(header), overflow="fold"
    )


def fits(console: Console, table: Table) -> bool:
    """Whether ``table`` at its natural width (nothing wrapped) fits the console."""
    natural = console.measure(table, options=console.options.update_width(10_000)).maximum
    return natural <= console.width


def codes(names: Iterable[str]) -> dict[str, str]:
    """A short column name per stage: the known codes, else the name if short, else S1, S2..."""
    out: dict[str, str] = {}
    others = 0
    for name in names:
        code = STAGE_CODES.get(name, name if len(name) <= 8 else "")
        if not code:
            others += 1
            code = f"S{others}"
        out[name] = code
    return out


def legend(console: Console, codes: dict[str, str]) -> None:
    """``A.gen = actor_generate`` pairs, packed into lines; a pair is never split."""
    pairs = [f"{code} = {name}" for name, code in codes.items() if code != name]
    lines: list[str] = []
    for pair in pairs:
        if lines and len(lines[-1]) + 2 + len(pair) <= console.width:
            lines[-1] += "  " + pair
        else:
            lines.append(pair)
    for line in lines:
        console.print(printable(line), style="dim", highlight=False, soft_wrap=True, markup=False)
