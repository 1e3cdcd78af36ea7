"""The scale benchmark's table and plan listing."""

from __future__ import annotations

from benchmarks.scale.generate import GenerateReport, ScaleConfig
from benchmarks.scale.measure import Measurements
from benchmarks.scale.plans import PlanFinding

PAGE_TARGET_MS = 150.0
CLAIM_P50_TARGET_MS = 50.0
CLAIM_P95_TARGET_MS = 200.0
INGEST_TARGET = 500.0
SWEEP_TARGET_S = 10.0


def format_table(
    results: list[Measurements], generation: dict[str, GenerateReport], config: ScaleConfig
) -> str:
    """One row per figure, one column per backend, and the target."""
    names = [m.backend for m in results]
    rows: list[tuple[str, list[str], str]] = []
    if generation:
        rows.append(
            ("generate (s)", [_get(generation, n, lambda g: f"{g.seconds['total']:.0f}") for n in names], "")
        )
        rows.append(
            (
                "  alerts raised by the sweep",
                [_get(generation, n, lambda g: str(g.alerts)) for n in names],
                "",
            )
        )
    rows.append(("runs stored", [f"{m.runs:,}" for m in results], ""))
    rows.append(
        (
            "ingest, batches (results/s, HTTP)",
            [
                f"{m.ingest_per_s:.0f} ({m.ingest_results} new, {m.ingest_batch_size} a batch)"
                for m in results
            ],
            f"≥ {INGEST_TARGET:.0f} on PG",
        )
    )
    rows.append(
        (
            "  one result a request",
            [f"{m.single_ingest_per_s:.0f} ({m.single_ingest_results} new)" for m in results],
            "",
        )
    )
    rows.append(
        (
            "  one a request, deferred detection",
            [f"{m.deferred_per_s:.0f} ({m.deferred_results} new)" for m in results],
            "",
        )
    )
    rows.append(
        (
            "  then one pass over the marked series (s)",
            [f"{m.drain_s:.1f} ({m.drain_series} series)" for m in results],
            "",
        )
    )
    rows.append(
        (
            "claim p50 / p95 (ms), paced runners",
            [f"{m.claim_p50_ms:.0f} / {m.claim_p95_ms:.0f}" for m in results],
            f"≤ {CLAIM_P50_TARGET_MS:.0f} / ≤ {CLAIM_P95_TARGET_MS:.0f}",
        )
    )
    rows.append(
        (
            "  runners (client processes) / job time (s) / claims per s",
            [
                f"{m.claim_runners} ({m.claim_client_processes}) / {m.claim_job_s:g} / {m.claims_per_s:.0f}"
                for m in results
            ],
            "",
        )
    )
    rows.append(
        (
            "  back to back: p50 / p95 (ms), claims per s",
            [
                f"{m.burst_claim_p50_ms:.0f} / {m.burst_claim_p95_ms:.0f}, {m.burst_claims_per_s:.0f}"
                for m in results
            ],
            "",
        )
    )
    rows.append(
        (
            "  server CPU per claim (ms), paced / back to back",
            [f"{m.claim_cpu_ms:.1f} / {m.burst_claim_cpu_ms:.1f}" for m in results],
            "",
        )
    )
    rows.append(
        (
            "  idle, long-polling: claims per s / server CPU",
            [f"{m.idle_claims_per_s:.1f} / {m.idle_server_cpu_pct:.1f} %" for m in results],
            "",
        )
    )
    rows.append(
        (
            "  job queued to claimed p50 / p95 (ms)",
            [f"{m.wake_p50_ms:.0f} / {m.wake_p95_ms:.0f} ({m.wake_jobs})" for m in results],
            "",
        )
    )
    rows.append(
        (
            "  jobs claimed / claimed twice",
            [f"{m.claimed_jobs} / {m.duplicate_claims}" for m in results],
            "0 twice",
        )
    )
    for label in results[0].pages if results else []:
        rows.append(
            (f"{label} p50 / p95 (ms)", [_page(m, label) for m in results], f"p95 < {PAGE_TARGET_MS:.0f}")
        )
    rows.append(
        (
            "detection sweep (s)",
            [f"{m.sweep_s:.2f} ({m.sweep_series} series)" for m in results],
            f"< {SWEEP_TARGET_S:.0f}",
        )
    )
    rows.append(("database size (MiB)", [f"{m.size_mb:.0f}" for m in results], ""))
    for table in ("runs", "run_artifacts", "run_stages", "jobs"):
        cells = [f"{m.table_mb[table]:.0f}" if table in m.table_mb else "-" for m in results]
        rows.append((f"  {table} (MiB)", cells, ""))
    title = (
        f"{config.cases} cases × {config.hardware} hardware × {config.nights} nights, "
        f"{config.steps} steps a run, {config.comparisons} PR comparisons"
    )
    width = max(len(row[0]) for row in rows)
    columns = [max(len(n), *(len(row[1][i]) for row in rows)) for i, n in enumerate(names)]
    lines = [
        title,
        f"{'':<{width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, columns, strict=True)) + "  target",
    ]
    for label, values, target in rows:
        joined = "  ".join(f"{v:>{w}}" for v, w in zip(values, columns, strict=True))
        lines.append(f"{label:<{width}}  {joined}  {target}")
    return "\n".join(lines)


def _page(m: Measurements, label: str) -> str:
    p50, p95 = m.pages.get(label, (0.0, 0.0))
    flag = "" if p95 < PAGE_TARGET_MS else " !"
    return f"{p50:.0f} / {p95:.0f}{flag}"


def _get(generation: dict[str, GenerateReport], name: str, render: object) -> str:
    report = generation.get(name)
    if report is None or not callable(render):
        return "-"
    return str(render(report))


def format_plans(findings: list[PlanFinding], *, verbose: bool) -> str:
    """The statements whose plan scans a big table in full (``verbose``: every plan)."""
    lines = []
    for finding in findings:
        if not (verbose or finding.full_scans):
            continue
        mark = f"FULL SCAN of {', '.join(finding.full_scans)}" if finding.full_scans else "ok"
        lines.append(f"[{finding.origin}] {mark}")
        if verbose or finding.full_scans:
            lines.append("  " + " ".join(finding.statement.split())[:600])
            lines.extend("    " + line for line in finding.plan.splitlines())
    return "\n".join(lines) if lines else "none"
