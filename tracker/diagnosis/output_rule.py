"""The ``output`` finding: the seeded output changed beyond the case's tolerance (pure).

A change that alters the picture is said first, before any mechanism or timing: a faster commit
that changed the output is not a plain speed-up.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracker.diagnosis.facts import Finding, FindingKind, OutputFact

OUTPUT_WEIGHT = 4.0  # above every other finding (compile counters start at 3.0)


def output_finding(output: OutputFact | None) -> Finding | None:
    """ "output changed: PSNR 27.1 dB, SSIM 0.812 against the last good commit (tolerance 40 dB)",
    or ``None`` when the output is the same picture or was not compared."""
    if output is None or not output.changed:
        return None
    measured = []
    if output.psnr_db is not None:
        measured.append(f"PSNR {output.psnr_db:.1f} dB")
    if output.ssim is not None:
        measured.append(f"SSIM {output.ssim:.3f}")
    numbers = ": " + ", ".join(measured) if measured else ""
    return Finding(
        kind=FindingKind.OUTPUT,
        summary=f"output changed{numbers} against {output.against} (tolerance {output.tolerance_db:g} dB)",
        detail={
            "psnr_db": output.psnr_db,
            "ssim": output.ssim,
            "tolerance_db": output.tolerance_db,
            "before_run_id": output.before_run_id,
            "after_run_id": output.after_run_id,
        },
        weight=OUTPUT_WEIGHT,
    )


def with_output(found: Sequence[Finding], output: OutputFact | None) -> list[Finding]:
    """``found`` with the output finding, if any, most telling first."""
    finding = output_finding(output)
    if finding is None:
        return list(found)
    return sorted([finding, *found], key=lambda item: -item.weight)
