"""The HTML report's sections of what counters give (``prof.count``): throughput per stage
(and per rank and step) and the RL ledger; none where no counter was recorded."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.views.counted import LEDGER_NAMES, count_text, share_text

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.tables import Tables
    from mindspeed_prof.analysis.rows import Row

__all__ = ["counted_sections"]


class _Table(Protocol):
    """The report's table of rows (``views.html.tables.table``)."""

    def __call__(
        self,
        rows: Sequence[Row | Mapping[str, object]],
        columns: list[str],
        quiet: Iterable[str] = ...,
    ) -> str: ...


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f}"


def counted_sections(tables: Tables, _table: _Table, _esc: Callable[[str], str]) -> list[str]:
    """``<h2>`` sections: throughput per stage and per rank and step, the ledger lines and
    the long tail (shares as percentages, MFU with why it is missing); ``_table`` and
    ``_esc``: the report's own table and escaping (``views.html``)."""
    model = tables.throughput.model
    stages = tables.throughput.stages
    rows = tables.throughput.rows
    book = tables.ledger
    out: list[str] = []
    if stages:
        summary: list[dict[str, object]] = [
            {
                "stage": s.stage,
                "ranks": s.ranks,
                "steps": s.steps,
                "tokens_per_s": _rate(s.tokens_per_s),
                "slowest": ""
                if s.min_tokens_per_s is None
                else f"{_rate(s.min_tokens_per_s)} "
                f"(rank {rank_label(s.slowest_rank, s.slowest_source)})",
                "fastest": _rate(s.max_tokens_per_s),
                "samples_per_s": _rate(s.samples_per_s),
                "first_to_last": ""
                if s.first_tokens_per_s is None
                else f"{_rate(s.first_tokens_per_s)} -> {_rate(s.last_tokens_per_s)}",
                "trend": "" if s.change is None else f"{s.change:+.0%}",
                "mfu": share_text(s.mfu) if s.mfu is not None else "",
                "mfu_note": s.mfu_note or "",
            }
            for s in stages
        ]
        given = ", ".join(
            f"{k} {v:g} ({src})"
            for k, v, src in (
                ("FLOPs per token", model.flops_per_token, model.flops_from),
                ("peak TFLOPS", model.peak_tflops, model.peak_from),
            )
            if v is not None
        )
        out.append(
            "<h2>Throughput per rank (per second of stage time)</h2>"
            + _table(
                summary,
                [
                    "stage",
                    "ranks",
                    "steps",
                    "tokens_per_s",
                    "slowest",
                    "fastest",
                    "samples_per_s",
                    "first_to_last",
                    "trend",
                    "mfu",
                    "mfu_note",
                ],
                quiet=("mfu", "mfu_note", "samples_per_s", "trend", "first_to_last"),
            )
            + (f"<p>Model: {_esc(given)}.</p>" if given else "")
            + "".join(f"<p class='bad'>{_esc(p)}</p>" for p in model.problems)
        )
        out.append(
            "<h2>Throughput per stage, rank and step</h2>"
            + _table(
                [
                    {
                        **r.json(),
                        "rank": rank_label(r.rank, r.source),
                        "tokens_per_s": _rate(r.tokens_per_s),
                        "samples_per_s": _rate(r.samples_per_s),
                        "mfu": share_text(r.mfu) if r.mfu is not None else "",
                    }
                    for r in rows
                ],
                [
                    "stage",
                    "rank",
                    "step",
                    "seconds",
                    "tokens",
                    "samples",
                    "tokens_per_s",
                    "samples_per_s",
                    "counted_in",
                    "mfu",
                    "mfu_note",
                ],
                quiet=("tokens", "samples", "tokens_per_s", "samples_per_s", "mfu", "mfu_note"),
            )
        )
    if book is not None:
        lines = [
            {
                "line": LEDGER_NAMES.get(x.line, x.line),
                "counter": x.counter,
                "count": count_text(x.count),
                "of": count_text(x.of),
                "share": share_text(x.share),
                "seconds": "" if x.seconds is None else f"{x.seconds:,.3f}",
                "of_generation": share_text(x.time_share) if x.time_share is not None else "",
                "steps": x.steps,
                "note": x.note or "",
            }
            for x in book.lines
        ]
        html = "<h2>RL ledger (docs/ledger.md)</h2>"
        if lines:
            html += _table(
                lines,
                [
                    "line",
                    "counter",
                    "count",
                    "of",
                    "share",
                    "seconds",
                    "of_generation",
                    "steps",
                    "note",
                ],
                quiet=("seconds", "of_generation", "note"),
            )
        t = book.tail
        if t is not None and t.responses:
            held = (
                f" ({t.seconds:,.3f} s of {t.generation_s:,.3f} s)"
                if t.seconds is not None and t.generation_s is not None
                else ""
            )
            html += (
                f"<p>Long tail: {t.responses:,} responses, length p50 {count_text(t.p50)}"
                f", p95 {count_text(t.p95)}, p99 {count_text(t.p99)}, max "
                f"{count_text(t.max)}; after 95% had finished, decode ran "
                f"{share_text(t.share)} of generation{_esc(held)}.</p>"
            )
        if t is not None and t.note:
            html += f"<p>{_esc(t.note)}</p>"
        out.append(html)
    return out
