"""The printed tables (rich, Markdown-style boxes so they paste into docs/detection.md as they are)."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from benchmarks.detection.abpower import NOISE_LEVELS_PCT as AB_NOISE
from benchmarks.detection.abpower import ROUND_COUNTS, TRUE_CHANGES_PCT, PowerCell
from benchmarks.detection.dataset import CHANGE_SIZES_PCT, NOISE_LEVELS_PCT, LabelledSeries
from benchmarks.detection.evaluate import DetectorScore
from benchmarks.detection.peers import THRESHOLD_PCT
from benchmarks.detection.scoring import TOLERANCE
from benchmarks.detection.streaming import MAX_DELAY


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _table(title: str, *columns: str) -> Table:
    table = Table(box=box.MARKDOWN, pad_edge=False)
    table.caption = title  # printed above the table by _show, where it cannot wrap
    for number, column in enumerate(columns):
        table.add_column(column, justify="left" if number == 0 else "right")
    return table


def _show(console: Console, table: Table) -> None:
    title, table.caption = table.caption, None
    console.print(f"{title}:", highlight=False)
    console.print(table)


def dataset_summary(console: Console, dataset: Sequence[LabelledSeries]) -> None:
    """What the dataset holds."""
    points = sum(len(series.values) for series in dataset)
    changes = [change for series in dataset for change in series.changes]
    kinds: dict[str, int] = {}
    for series in dataset:
        kinds[series.kind] = kinds.get(series.kind, 0) + 1
    console.print(
        f"dataset: {len(dataset)} series, {points} nightly points, {len(changes)} labelled changes "
        f"({sum(change.size_pct >= THRESHOLD_PCT for change in changes)} of at least {THRESHOLD_PCT:g} %); "
        + ", ".join(f"{kind} {count}" for kind, count in kinds.items())
    )


def detection_table(console: Console, scores: Sequence[DetectorScore]) -> None:
    """Precision, recall, F1, false alarms, exact culprits and delay per detector."""
    table = _table(
        f"Detection on full series (threshold {THRESHOLD_PCT:g} %, match within ±{TOLERANCE} commits, same direction)",
        "detector",
        "precision",
        "recall",
        "F1",
        "false alarms /1000 pts",
        "exact commit",
        f"seen ≤{MAX_DELAY} runs",
        "delay median",
        "delay mean",
    )
    for score in scores:
        tally = score.tally
        full = tally.points > 0
        if not full and not score.delays:
            continue
        table.add_row(
            score.name,
            _f(tally.precision, 3) if full else "",
            _f(tally.recall, 3) if full else "",
            _f(tally.f1, 3) if full else "",
            _f(tally.false_alarms_per_1000) if full else "",
            _f(tally.exact_share, 3) if full else "",
            _f(score.seen_in_time, 3) if score.delays else "",
            _f(score.median_delay, 1),
            _f(score.mean_delay),
        )
    _show(console, table)


def recall_table(console: Console, scores: Sequence[DetectorScore]) -> None:
    """Recall by change size, and of 2 % changes in quiet series."""
    sizes = CHANGE_SIZES_PCT
    table = _table(
        "Recall by change size (1 % is below the threshold: not expected, not in the totals)",
        "detector",
        *(f"{size:g} %" for size in sizes),
        "≥3 % pooled",
        "2 % at CV ≤0.5 %",
        "3 % at CV ≤1 %",
    )
    for score in scores:
        tally = score.tally
        if not tally.points:
            continue
        big = [size for size in sizes if size >= 3.0]
        pooled_found = sum(tally.found_by_size[size] for size in big)
        pooled_total = sum(tally.total_by_size[size] for size in big)
        table.add_row(
            score.name,
            *(_f(tally.recall_of(size)) for size in sizes),
            _f(pooled_found / pooled_total if pooled_total else None),
            _f(tally.recall_of(2.0, 0.5)),
            _f(tally.recall_of(3.0, 1.0)),
        )
    _show(console, table)


def perftrack_cells(console: Console, score: DetectorScore) -> None:
    """perftrack's recall per noise level and change size (where the misses are)."""
    table = _table(
        f"{score.name}: recall by noise CV (rows) and change size (columns)",
        "noise CV",
        *(f"{size:g} %" for size in CHANGE_SIZES_PCT),
    )
    tally = score.tally
    for noise in NOISE_LEVELS_PCT:
        row = []
        for size in CHANGE_SIZES_PCT:
            total = tally.total_by_cell.get((noise, size), 0)
            found = tally.found_by_cell.get((noise, size), 0)
            row.append(f"{found}/{total}" if total else "–")
        table.add_row(f"{noise:g} %", *row)
    _show(console, table)


def false_alarm_table(console: Console, scores: Sequence[DetectorScore]) -> None:
    """False alarms per 1,000 points by series kind."""
    kinds = ("flat", "drift", "bimodal", "step", "regression_fix")
    table = _table("False alarms per 1000 points, by series kind", "detector", *kinds)
    for score in scores:
        tally = score.tally
        if not tally.points:
            continue
        table.add_row(
            score.name,
            *(
                _f(1000.0 * tally.false_alarms_by_kind.get(kind, 0) / tally.points_by_kind[kind])
                if tally.points_by_kind.get(kind)
                else "–"
                for kind in kinds
            ),
        )
    _show(console, table)


def power_tables(console: Console, cells: Sequence[PowerCell]) -> None:
    """A/B verdicts: power, the sub-threshold change, A/A false verdicts, and what a prior does."""
    by_key = {(cell.change_pct, cell.noise_pct, cell.rounds, cell.with_prior): cell for cell in cells}
    power = _table(
        f"A/B: share of verdicts 'regression' for a true +X % change (threshold {THRESHOLD_PCT:g} %, no prior)",
        "true change, noise",
        *(f"{rounds} rounds" for rounds in ROUND_COUNTS),
        "2 rounds + prior",
    )
    for change in TRUE_CHANGES_PCT:
        for noise in AB_NOISE:
            label = f"+{change:g} %, noise {noise:g} %"
            power.add_row(
                label,
                *(_f(by_key[(change, noise, rounds, False)].regression) for rounds in ROUND_COUNTS),
                _f(by_key[(change, noise, 2, True)].regression),
            )
    _show(console, power)
    below = _table(
        f"A/B: +1 % (below the {THRESHOLD_PCT:g} % threshold): share 'no_change' (the right verdict)",
        "noise",
        *(f"{rounds} rounds" for rounds in ROUND_COUNTS),
        "2 rounds + prior",
    )
    for noise in AB_NOISE:
        below.add_row(
            f"{noise:g} %",
            *(_f(by_key[(1.0, noise, rounds, False)].no_change) for rounds in ROUND_COUNTS),
            _f(by_key[(1.0, noise, 2, True)].no_change),
        )
    _show(console, below)
    aa = _table(
        "A/A: share of false verdicts (regression or improvement when head == base)",
        "noise",
        *(f"{rounds} rounds" for rounds in ROUND_COUNTS),
        "2 rounds + prior",
    )
    for noise in AB_NOISE:
        aa.add_row(
            f"{noise:g} %",
            *(_f(by_key[(0.0, noise, rounds, False)].false_verdict, 3) for rounds in ROUND_COUNTS),
            _f(by_key[(0.0, noise, 2, True)].false_verdict, 3),
        )
    _show(console, aa)
