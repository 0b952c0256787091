"""What every answer keeps, whatever the input: checks on the ``--json`` (and text) of
``analyse``, ``doctor``, ``compare`` and ``timeline``, each raising ``AssertionError`` with one
line naming the rule, the row and the figures.

- ``finite``: no NaN or infinity anywhere (a division by a zero or subnormal duration);
- ``shares``: every share, and every percentage a finding or the verdict prints, in [0, 100%];
- ``device_sums``: per rank and step (and stage run) compute + exposed communication + copy +
  idle = the span on the device (within 0.1%), no part negative;
- ``phase_sums``: per rank and step, generation + training + transitions + other stages +
  uncovered = the step (``phases``), no part negative, the transitions' parts their sum;
- ``counted_once``: each rank and step (each capture, kernel, op...) one row;
- ``verdict_reads_rows``: the verdict is recomputed from the tables it summarises (the step
  from ``per_step``, the device split from ``device``, the straggler from its table);
- ``findings_agree``: a device finding quotes, per rank, the means of the rows the verdict
  read (never a no-step row beside step rows), and says "per step" exactly when the verdict
  does;
- ``counted_rows``: throughput and the RL ledger (counters): every ledger share, time
  share and MFU in [0, 1] (or None with the reason), wasted seconds within the generation
  seconds, percentiles in order; each stage's tokens/s recomputed from the per rank and step
  rows, the verdict's throughput the same stages; a ledger finding quotes the ledger's counts;
- ``exit_code``: as the README's table says (0 every capture read, 3 some part skipped, 1
  nothing read).

``check_analysis`` runs them all on one ``analyse --json``; ``check_text``, ``check_doctor``,
``check_compare_self`` and ``check_timeline`` hold the other commands to the same answer.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

__all__ = [
    "REL",
    "check_analysis",
    "check_compare_self",
    "check_doctor",
    "check_text",
    "check_timeline",
    "counted_once",
    "counted_rows",
    "decode",
    "device_rows",
    "device_sums",
    "exit_code",
    "findings_agree",
    "finite",
    "phase_sums",
    "printed_finite",
    "shares",
    "verdict_reads_rows",
]

#: How far a sum may be from its span, relative to the span (0.1%).
REL = 1e-3
#: How far apart two figures derived from the same rows may be, in ms (summation order).
ABS_MS = 1e-6
PARTS = ("compute", "communication", "copy", "idle")
_SHORT = {"compute": "compute_ms", "communication": "comm_ms", "copy": "copy_ms", "idle": "idle_ms"}


def decode(text: str) -> Any:
    """JSON as the CLI wrote it; a NaN or Infinity token (``json.dumps``' default lets them
    through) fails here, naming it."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"finite: {token} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def _walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path or ".", node


def finite(doc: Any) -> None:
    """Every number finite; no string that is a stringified NaN or infinity (``default=str``)."""
    for path, value in _walk(doc):
        if isinstance(value, float):
            assert math.isfinite(value), f"finite: {path} = {value}"
        elif isinstance(value, str):
            assert value.strip().lower() not in {"nan", "inf", "-inf", "infinity", "-infinity"}, (
                f"finite: {path} = {value!r}"
            )


# -- shares -------------------------------------------------------------------------------------

_PERCENT = re.compile(r"(?<![\w.])(-?[\d,]+(?:\.\d+)?)%")


def _percents(text: str) -> list[float]:
    return [float(m.group(1).replace(",", "")) for m in _PERCENT.finditer(text)]


def shares(doc: dict[str, Any]) -> None:
    """Every share (a fraction of a whole) in [0, 1], the device split summing to 1; every
    ``N%`` a finding prints that is a share of a whole (``of the step``, ``of its``...) in
    [0, 100]."""
    v = doc["verdict"]
    if v.get("device"):
        split = v["device"]["shares"]
        assert set(split) == set(PARTS), f"shares: verdict.device.shares keys {sorted(split)}"
        for k, s in split.items():
            assert 0.0 <= s <= 1.0, f"shares: verdict.device.shares.{k} = {s}"
        total = sum(split.values())
        assert total == 0.0 or abs(total - 1.0) < 1e-9, f"shares: device shares sum to {total}"
    if v.get("slowest") and v["slowest"]["share"] is not None:
        s = v["slowest"]["share"]
        assert 0.0 <= s <= 1.0 + REL, f"shares: verdict.slowest.share = {s} ({v['slowest']})"
    if v.get("memory") and v["memory"].get("share") is not None:
        s = v["memory"]["share"]
        assert 0.0 <= s <= 1.0, f"shares: verdict.memory.share = {s}"
    if v.get("step"):
        assert v["step"]["spread"] >= 0.0, f"shares: verdict.step.spread = {v['step']}"
    for f in doc["findings"]:
        for text in (f["title"], *f["detail"].splitlines()):
            # "N% of X", "(N%)" and "N% -> M%" are shares of a whole; "N% apart" is a spread
            for m in _PERCENT.finditer(text):
                after = text[m.end() : m.end() + 8]
                if after.startswith((" apart", " more", " faster", " slower")):
                    continue
                p = float(m.group(1).replace(",", ""))
                assert 0.0 <= p <= 100.0, f"shares: {f['rule']}: {p}% in {text!r}"


# -- device rows --------------------------------------------------------------------------------


def exposed(row: dict[str, Any]) -> float:
    """A row's communication not overlapped with compute: torch_npu's own column where the
    row has it, else communication less the overlap."""
    if row.get("comm_exposed_ms") is not None:
        return float(row["comm_exposed_ms"])
    return max(float(row["comm_ms"] - row["overlap_ms"]), 0.0)


def span(row: dict[str, Any]) -> float | None:
    """The step (stage run) on the device: the CUDA device window, else torch_npu's Stage."""
    if row.get("span_ms") is not None:
        return float(row["span_ms"])
    if row.get("step_ms") is not None:
        return float(row["step_ms"])
    return None


def copy_exposed(row: dict[str, Any]) -> float:
    """The copy time neither compute nor exposed communication covers: where the row has its
    busy time, busy less those two (copies beside a kernel are not counted twice), else every
    copy."""
    if row.get("busy_ms") is not None:
        return max(float(row["busy_ms"] - row["compute_ms"]) - exposed(row), 0.0)
    return float(row.get("memcpy_ms") or 0.0)


def parts(row: dict[str, Any]) -> dict[str, float]:
    return {
        "compute": row["compute_ms"],
        "communication": exposed(row),
        "copy": copy_exposed(row),
        "idle": row["idle_ms"],
    }


def _where(row: dict[str, Any]) -> str:
    src = f" ({row['source']})" if row.get("source") else ""
    stage = f", stage {row['stage']}" if row.get("stage") else ""
    return f"rank {row['rank']}{src}, step {row['step']}{stage}"


def device_sums(doc: dict[str, Any]) -> None:
    """Per rank and step (and stage run): no part negative, overlap within both compute and
    communication, and compute + exposed communication + copy + idle = the span (0.1%)."""
    for row in doc["device"]:
        where = _where(row)
        for k in (
            "compute_ms",
            "comm_ms",
            "overlap_ms",
            "idle_ms",
            "memcpy_ms",
            "span_ms",
            "busy_ms",
            "comm_exposed_ms",
            "step_ms",
        ):
            if row.get(k) is not None:
                assert row[k] >= 0.0, f"device_sums: {where}: {k} = {row[k]}"
        slack = ABS_MS + REL * max(row["comm_ms"], row["compute_ms"])
        assert row["overlap_ms"] <= row["comm_ms"] + slack, f"device_sums: {where}: {row}"
        total = span(row)
        assert total is not None, f"device_sums: {where}: neither span_ms nor step_ms: {row}"
        got = sum(parts(row).values())
        assert abs(got - total) <= REL * total + ABS_MS, (
            f"device_sums: {where}: compute + exposed comm + copy + idle = {got!r} ms, "
            f"span {total!r} ms: {row}"
        )
        copies = row.get("memcpy_ms") or 0.0
        assert copy_exposed(row) <= copies + REL * total + ABS_MS, (
            f"device_sums: {where}: copy not covered {copy_exposed(row)!r} ms, more than "
            f"every copy ({copies!r} ms): {row}"
        )
        if row.get("busy_ms") is not None and row.get("span_ms") is not None:
            assert abs(row["busy_ms"] + row["idle_ms"] - row["span_ms"]) <= (
                REL * row["span_ms"] + ABS_MS
            ), f"device_sums: {where}: busy + idle: {row}"


PHASE_PARTS = ("generation_ms", "training_ms", "transition_ms", "other_ms", "uncovered_ms")


def phase_sums(doc: dict[str, Any]) -> None:
    """Per rank and step: no part negative, the parts add up to the step, and the
    transitions' own parts add up to ``transition_ms``."""
    for row in doc.get("phases", []):
        where = f"rank {row['rank']} step {row['step']}"
        for k in (*PHASE_PARTS, "step_ms"):
            assert row[k] >= 0.0, f"phase_sums: {where}: {k} = {row[k]}"
        got = sum(row[k] for k in PHASE_PARTS)
        assert abs(got - row["step_ms"]) <= REL * row["step_ms"] + ABS_MS, (
            f"phase_sums: {where}: parts {got!r} ms, step {row['step_ms']!r} ms: {row}"
        )
        inner = sum(row["transitions"].values())
        assert abs(inner - row["transition_ms"]) <= REL * row["step_ms"] + ABS_MS, (
            f"phase_sums: {where}: transitions {inner!r} ms, phase {row['transition_ms']!r}"
        )


# -- counted once -------------------------------------------------------------------------------


def _dupes(rows: list[dict[str, Any]], *keys: str) -> list[tuple[Any, ...]]:
    seen = Counter(tuple(r.get(k) for k in keys) for r in rows)
    return [k for k, n in seen.items() if n > 1]


def counted_once(doc: dict[str, Any]) -> None:
    """Each rank and step one row (per table), each capture, kernel, op and runtime call one
    row, each straggler once."""
    tables = {
        "per_step": ("rank", "source", "step"),
        "phases": ("rank", "source", "step"),
        "stage_rank": ("stage", "rank", "source"),
        "ranges": ("name", "rank", "source"),
        "inventory": ("file", "source"),
        "top_kernels": ("name",),
        "top_ops": ("op",),
        "top_runtime": ("name",),
        "stragglers": ("stage", "step", "rank", "source"),
        "range_stragglers": ("range", "step", "rank", "source"),
        "comm": ("rank", "source", "step", "kind", "name"),
    }
    for table, keys in tables.items():
        # torch_npu's link rows are one per communication group, which it names alike
        rows = [r for r in doc[table] if table != "comm" or r["kind"] != "link"]
        dupes = _dupes(rows, *keys)
        assert not dupes, f"counted_once: {table} repeats {keys} = {dupes[:3]}"
    whole = [r for r in doc["device"] if r["stage"] is None]
    dupes = _dupes(whole, "rank", "source", "step")
    assert not dupes, f"counted_once: device repeats (rank, source, step) = {dupes[:3]}"
    assert doc["ranks"] == sorted(set(doc["ranks"]), key=lambda r: (r is None, r or 0)), (
        f"counted_once: ranks {doc['ranks']}"
    )


# -- the verdict against its rows ---------------------------------------------------------------


def device_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows a device answer reads: whole steps (no stage runs), warmup left out; the rows
    with a step where any has one, else the rows of captures without steps. Steps and
    no-step rows are never averaged together."""
    whole = [r for r in doc["device"] if r["stage"] is None and not r["warmup"]]
    return [r for r in whole if r["step"] is not None] or whole


def _close(a: float, b: float, what: str) -> None:
    assert abs(a - b) <= ABS_MS + 1e-9 * max(abs(a), abs(b)), f"{what}: {a!r} != {b!r}"


def _step_times(doc: dict[str, Any]) -> tuple[dict[int, float], set[Any]]:
    """Per step, the step the job lived: its slowest rank's (the per-step table's totals, else
    the step on the device)."""
    per: dict[int, list[float]] = defaultdict(list)
    ranks = set()
    for r in doc["per_step"]:
        if r.get("total") is not None and not r["warmup"]:
            per[r["step"]].append(r["total"])
            ranks.add((r["rank"], r["source"]))
    if not per:  # no step ranges: the step on the device
        for r in doc["device"]:
            ms = r["step_ms"] if r.get("step_ms") is not None else r.get("span_ms")
            if r["stage"] is None and r["step"] is not None and ms and not r["warmup"]:
                per[r["step"]].append(ms)
                ranks.add((r["rank"], r["source"]))
    return {s: max(v) for s, v in per.items()}, ranks


def verdict_reads_rows(doc: dict[str, Any]) -> None:
    """The verdict's step, device split and straggler recomputed from the tables."""
    v = doc["verdict"]
    steps, ranks = _step_times(doc)
    if not steps:
        assert v["step"] is None, f"verdict_reads_rows: a step without step rows: {v['step']}"
    else:
        s = v["step"]
        assert s is not None, "verdict_reads_rows: step rows but no step in the verdict"
        ms = list(steps.values())
        _close(s["median_ms"], statistics.median(ms), "verdict_reads_rows: step.median_ms")
        _close(s["min_ms"], min(ms), "verdict_reads_rows: step.min_ms")
        _close(s["max_ms"], max(ms), "verdict_reads_rows: step.max_ms")
        assert (s["steps"], s["ranks"]) == (len(ms), len(ranks)), (
            f"verdict_reads_rows: step counts {s['steps']} steps on {s['ranks']} ranks; rows "
            f"hold {len(ms)} steps on {len(ranks)} ranks"
        )
    # slowest.share is of the step the job lived, its time on its slowest rank: never over
    # 100% (``shares``), not ms / median step
    rows = device_rows(doc)
    d = v["device"]
    if not rows:
        assert d is None, f"verdict_reads_rows: a device verdict without device rows: {d}"
    else:
        assert d is not None, "verdict_reads_rows: device rows but no device verdict"
        sums = dict.fromkeys(PARTS, 0.0)
        for r in rows:
            for k, x in parts(r).items():
                sums[k] += x
        n = len(rows)
        for k in PARTS:
            _close(d[_SHORT[k]], sums[k] / n, f"verdict_reads_rows: device.{_SHORT[k]}")
        total = sum(sums.values())
        for k in PARTS:
            _close(
                d["shares"][k],
                sums[k] / total if total > 0 else 0.0,
                f"verdict_reads_rows: device.shares.{k}",
            )
        top = max(PARTS, key=lambda k: (sums[k], -PARTS.index(k)))
        assert d["bound"] == top or math.isclose(sums[d["bound"]], sums[top], rel_tol=1e-12), (
            f"verdict_reads_rows: bound {d['bound']}, rows say {top}: {sums}"
        )
        assert d["ranks"] == len({(r["rank"], r["source"]) for r in rows}), (
            f"verdict_reads_rows: device.ranks {d['ranks']}"
        )
        assert d["steps"] == len({r["step"] for r in rows if r["step"] is not None}), (
            f"verdict_reads_rows: device.steps {d['steps']}"
        )
    for key in ("straggler", "one_off"):
        g = v.get(key)
        if g is None:
            continue
        kind = g["kind"]
        if kind in ("stage", "range"):
            name = "stragglers" if kind == "stage" else "range_stragglers"
            table = doc[name]
            said = {**{k: x for k, x in g.items() if k not in ("kind", "name")}, kind: g["name"]}
            assert said in table, (
                f"verdict_reads_rows: the verdict's {key} {said} is not a row of {name}"
            )
            mine = [
                r
                for r in table
                if (r[kind], r["rank"], r["source"]) == (g["name"], g["rank"], g["source"])
            ]
            assert g["excess_ms"] == max(r["excess_ms"] for r in mine), (
                f"verdict_reads_rows: {g} is not the worst of its rows in {name}"
            )
            b = v.get("behind")
            if key == "straggler":  # named: its worst step, its count of them
                assert b is not None and b["worst"] == g and b["behind"] == len(mine), (
                    f"verdict_reads_rows: behind {b} against {len(mine)} rows of {name}"
                )
                assert b["consistent"] and b["lag_ms"] > 0, f"verdict_reads_rows: {b}"
            else:  # a one-off: none named
                assert b is None, f"verdict_reads_rows: a one-off beside a straggler: {b}"
        else:  # device compute time: the row of that rank and step
            (row,) = [
                r
                for r in rows
                if (r["rank"], r["source"], r["step"]) == (g["rank"], g["source"], g["step"])
            ]
            _close(g["ms"], row["compute_ms"], "verdict_reads_rows: straggler.ms")
    if v.get("straggler") is None and v.get("one_off") is None:
        assert not doc["stragglers"], (
            "verdict_reads_rows: stage stragglers listed but neither a straggler nor a one-off "
            "in the verdict"
        )


# -- the findings against the verdict -----------------------------------------------------------

_NUM = r"(-?[\d,]+\.\d)"
_WHOLE = re.compile(r"^(.+) \(([^()]+), no steps\)$")
_IDLE = re.compile(rf"^rank (.+?): idle {_NUM} of {_NUM} ms (per step|in the capture);")
_COMM = re.compile(
    rf"^rank (.+?): communication {_NUM} ms (per step|in the capture), {_NUM} "
    rf"ms of it while no compute ran, of a {_NUM} ms step"
)


def _label(row: dict[str, Any]) -> str:
    text = "?" if row["rank"] is None else str(row["rank"])
    return f"{text} ({row['source']})" if row["source"] else text


def _f(text: str) -> float:
    return float(text.replace(",", ""))


def _near(quoted: str, exact: float, what: str) -> None:
    """A figure printed to one decimal is the exact one rounded (0.05, and a hair)."""
    assert abs(_f(quoted) - exact) <= 0.05 + 1e-6 * abs(exact), (
        f"{what}: says {quoted}, rows {exact:.4f}"
    )


def findings_agree(doc: dict[str, Any]) -> None:
    """Each device finding's per-rank figures are the means of that rank's rows among those
    the verdict read: the idle (exposed communication) it quotes, the step it quotes it "of",
    and "per step" exactly when the verdict averages steps. A finding on a rank the verdict
    did not read contradicts it."""
    rows = device_rows(doc)
    by_rank: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_rank[_label(r)].append(r)
    d = doc["verdict"]["device"]
    for f in doc["findings"]:
        rule = f["rule"]
        if rule not in ("cuda.idle_time", "cuda.exposed_comm"):
            continue
        pattern = _IDLE if rule == "cuda.idle_time" else _COMM
        quoted = [m for m in map(pattern.match, f["detail"].splitlines()) if m]
        assert quoted, f"findings_agree: {rule}: no per-rank line in {f['detail']!r}"
        for m in quoted:
            label = m.group(1)
            whole = _WHOLE.match(label)  # a capture without steps: "R (FILE, no steps)"
            mine = [
                r
                for r in by_rank.get(whole.group(1) if whole else label, [])
                if r.get("span_ms") is not None and (r["step"] is None or not whole)
            ]
            assert mine, (
                f"findings_agree: {rule} quotes rank {label}, whose rows the verdict "
                f"did not read ({f['title']!r})"
            )
            if whole and len(mine) > 1:  # several captures of the rank: the one it names
                mine = [
                    min(
                        mine,
                        key=lambda r: abs(
                            r["span_ms"] - _f(m.groups()[-2 if rule == "cuda.idle_time" else -1])
                        ),
                    )
                ]
            n = len(mine)
            per = "per step" if d and d["steps"] else "in the capture"
            what = f"findings_agree: {rule}, rank {label}"
            if rule == "cuda.idle_time":
                _, idle, of, said = m.groups()
                _near(idle, sum(r["idle_ms"] for r in mine) / n, f"{what}: idle")
                _near(of, sum(r["span_ms"] for r in mine) / n, f"{what}: the step")
            else:
                _, comm, said, exp, of = m.groups()
                _near(comm, sum(r["comm_ms"] for r in mine) / n, f"{what}: communication")
                _near(exp, sum(exposed(r) for r in mine) / n, f"{what}: exposed")
                _near(of, sum(r["span_ms"] for r in mine) / n, f"{what}: the step")
            assert said == per, f"{what}: the finding says {said!r}, the verdict {per!r}"


# -- counters: throughput and the RL ledger -----------------------------------------------------

_LEDGER_TITLE = re.compile(
    r"^(\d+)% of (?:generation time|the work generated).*: ([\d,.]+) of "
    r"([\d,.]+) \w+$"
)


def _unit(x: Any, what: str) -> None:
    if x is not None:
        assert 0.0 <= x <= 1.0, f"counted_rows: {what} = {x}"


def counted_rows(doc: dict[str, Any]) -> None:
    """Ledger shares and MFU within [0, 1]; seconds within generation; throughput per stage
    from its rows; the verdict's throughput the stages'; ledger findings quote the ledger."""
    book = doc.get("ledger")
    lines = {}
    if book:
        for x in book["lines"]:
            lines[x["line"]] = x
            where = f"ledger.{x['line']}"
            _unit(x["share"], f"{where}.share")
            _unit(x["time_share"], f"{where}.time_share")
            assert 0.0 <= x["count"] <= x["of"] or x["share"] is None, f"counted_rows: {x}"
            if x["seconds"] is not None:
                assert 0.0 <= x["seconds"] <= x["generation_s"] * (1 + 1e-9) + ABS_MS, (
                    f"counted_rows: {where}: {x['seconds']} s of {x['generation_s']} s"
                )
        t = book["tail"]
        if t:
            _unit(t["share"], "ledger.tail.share")
            assert t["p50"] <= t["p95"] <= t["p99"] <= t["max"], f"counted_rows: tail {t}"
            if t["seconds"] is not None:
                assert 0.0 <= t["seconds"] <= t["generation_s"] * (1 + 1e-9) + ABS_MS, (
                    f"counted_rows: tail {t}"
                )
    rows = doc["throughput"]["rows"]
    for r in rows:
        _unit(r["mfu"], f"throughput row {r['stage']} rank {r['rank']} step {r['step']} mfu")
        if r["mfu"] is None and r["tokens"] is not None:
            assert r["mfu_note"], f"counted_rows: no MFU and no reason: {r}"
    stages = doc["throughput"]["stages"]
    for s in stages:
        _unit(s["mfu"], f"throughput {s['stage']} mfu")
        per: dict[Any, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for r in rows:
            if r["stage"] == s["stage"] and r["tokens"] is not None:
                per[(r["rank"], r["source"])][0] += r["tokens"]
                per[(r["rank"], r["source"])][1] += r["seconds"]
        rates = [tok / sec for tok, sec in per.values() if sec > 0]
        if s["tokens_per_s"] is None:
            assert not rates, f"counted_rows: {s['stage']}: rows hold tokens/s {rates}"
        else:
            _close(
                s["tokens_per_s"],
                statistics.median(rates),
                f"counted_rows: {s['stage']} tokens_per_s",
            )
            _close(s["min_tokens_per_s"], min(rates), f"counted_rows: {s['stage']} min")
    assert doc["verdict"].get("throughput", []) == stages, (
        "counted_rows: the verdict's throughput is not the throughput table's"
    )
    for f in doc["findings"]:
        rule = f["rule"]
        if rule in ("rl.dropped", "rl.zero_variance", "rl.truncated"):
            m = _LEDGER_TITLE.match(f["title"])
            x = lines.get(rule.split(".", 1)[1])
            assert m and x, f"counted_rows: {rule}: {f['title']!r} against {x}"
            share = x["time_share"] if x["time_share"] is not None else x["share"]
            assert abs(int(m.group(1)) - share * 100) <= 0.5 + 1e-9, (
                f"counted_rows: {rule} says {m.group(1)}%, ledger {share}"
            )
            assert _f(m.group(2)) == round(x["count"]) and _f(m.group(3)) == round(x["of"]), (
                f"counted_rows: {rule} quotes {m.group(2)} of {m.group(3)}, ledger {x}"
            )
        elif rule == "rl.long_tail":
            t = (book or {}).get("tail")
            assert t, f"counted_rows: {rule} without a tail in the ledger"
            said = re.search(r"hold (\d+)% of generation", f["title"])
            assert said and abs(int(said.group(1)) - t["share"] * 100) <= 0.5 + 1e-9, (
                f"counted_rows: {rule}: {f['title']!r}, tail share {t['share']}"
            )


# -- exit codes ---------------------------------------------------------------------------------


def exit_code(code: int, doc: dict[str, Any] | None) -> None:
    """0 every capture read, 3 some part skipped or partly read (``problems``), 1 nothing."""
    if doc is None:
        assert code == 1, f"exit_code: nothing read, exit {code}"
        return
    want = 3 if doc["problems"] else 0
    assert code == want, f"exit_code: {code}, expected {want} (problems: {doc['problems'][:3]})"


def check_analysis(doc: dict[str, Any], code: int) -> None:
    """Every invariant on one ``analyse --json``."""
    finite(doc)
    exit_code(code, doc)
    shares(doc)
    device_sums(doc)
    phase_sums(doc)
    counted_once(doc)
    verdict_reads_rows(doc)
    findings_agree(doc)
    counted_rows(doc)


# -- the other commands -------------------------------------------------------------------------

_DEVICE_LINE = re.compile(r"compute (\d+)%, communication (\d+)%, copy (\d+)%, idle (\d+)%")
_NOT_A_NUMBER = re.compile(
    r"(?<![\w.])-?(?:nan|inf)(?:\s*(?:ms|%|x|MiB|GiB|GB/s)|\b)", re.IGNORECASE
)


def printed_finite(text: str) -> None:
    """No NaN or infinity printed as a figure (``nan ms``, ``inf%``...)."""
    bad = [m.group(0) for m in _NOT_A_NUMBER.finditer(" ".join(text.split()))]
    assert not bad, f"finite: the output prints {bad[:3]}"


def check_text(text: str, doc: dict[str, Any]) -> None:
    """The text view: no NaN or infinity printed, and the verdict's device line says the
    shares ``--json`` holds."""
    printed_finite(text)
    flat = " ".join(text.split())
    d = doc["verdict"]["device"]
    m = _DEVICE_LINE.search(flat)
    assert (m is None) == (d is None), f"check_text: device line {m and m.group(0)}, json {d}"
    if m and d:
        said = [int(x) for x in m.groups()]
        assert said == [round(d["shares"][k] * 100) for k in PARTS] or all(
            abs(a - d["shares"][k] * 100) <= 0.5 + 1e-9 for a, k in zip(said, PARTS)
        ), f"check_text: device line {m.group(0)!r}, json shares {d['shares']}"


def check_doctor(health: dict[str, Any], code: int, doc: dict[str, Any] | None) -> None:
    """doctor reads what analyse reads: the same ranks, a capture per inventory row; healthy
    exactly when it exits 0."""
    finite(health)
    assert health["healthy"] == (code == 0), f"doctor: healthy {health['healthy']}, exit {code}"
    assert code in (0, 3), f"doctor: exit {code}"
    assert bool(health["findings"]) == (code == 3), f"doctor: exit {code}: {health['findings']}"
    if doc is not None:
        assert sum(health["captures_per_rank"].values()) == len(doc["inventory"]), (
            f"doctor: captures {health['captures_per_rank']}, analyse read {len(doc['inventory'])}"
        )
        assert health["ranks_found"] == [r for r in doc["ranks"] if r is not None], (
            f"doctor: ranks {health['ranks_found']}, analyse {doc['ranks']}"
        )


def _means(doc: dict[str, Any]) -> dict[Any, dict[str, float]]:
    """Per rank, the mean of each device column over the rows the verdict reads
    (``device_rows``): compare's device table must say what analyse says."""
    per: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in device_rows(doc):
        per[r["rank"]].append(r)
    return {
        rank: {
            k: sum(r[k] for r in rows) / len(rows)
            for k in ("compute_ms", "comm_ms", "overlap_ms", "idle_ms")
        }
        for rank, rows in per.items()
    }


def check_compare_self(cmp: dict[str, Any], code: int, doc: dict[str, Any]) -> None:
    """``compare A A`` (or A against a variant with the same answer): no change anywhere, no
    warning, A and B's device means equal and equal to analyse's rows."""
    finite(cmp)
    exit_code(code, doc)
    assert cmp["warnings"] == [], f"compare: warnings {cmp['warnings']}"
    assert cmp["slower"] == [], f"compare: slower {cmp['slower']}"
    for table in ("rows", "ranges"):
        for row in cmp[table]:
            assert (
                row["change"] in (0.0, None) and not row["regression"] and not row["improvement"]
            ), f"compare: {table} {row}"
            assert row["impact_ms"] in (0.0, None), f"compare: {table} {row}"
    means = _means(doc)
    for row in cmp["device"]:
        for k in ("compute_ms", "comm_ms", "overlap_ms", "idle_ms"):
            a, b = row[f"a_{k}"], row[f"b_{k}"]
            assert a == b, f"compare: rank {row['rank']} {k}: A {a}, B {b}"
            if row["rank"] in means and a is not None:
                _close(a, means[row["rank"]][k], f"compare: rank {row['rank']} {k}")
    assert {r["rank"] for r in cmp["device"]} == set(means), (
        f"compare: device ranks {[r['rank'] for r in cmp['device']]}, rows {sorted(means, key=str)}"
    )


def check_timeline(trace: dict[str, Any], code: int, doc: dict[str, Any]) -> None:
    """The merged timeline: a track per rank (and host or folder, where two claim a rank), at
    most one per capture read; every time finite; the exit code analyse's."""
    exit_code(code, doc)
    finite(trace["otherData"])
    tracks = len(trace["otherData"]["tracks"])
    ranks = len({(r["rank"], r["source"]) for r in doc["inventory"]})
    assert ranks <= tracks <= len(doc["inventory"]), (
        f"timeline: {tracks} tracks for {ranks} ranks in {len(doc['inventory'])} captures"
    )
    for e in trace["traceEvents"]:
        for k in ("ts", "dur"):
            x = e.get(k)
            assert x is None or (isinstance(x, (int, float)) and math.isfinite(x)), (
                f"timeline: {k} = {x!r} in {e}"
            )
