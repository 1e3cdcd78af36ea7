"""What a pull request shows of a changed output: the comment's headline, verdict cell and output
line per result, and the commit status (a failure that says so, within GitHub's 140 characters)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from tests.tracker.comparisons.test_comparisons import compare, planted
from tests.tracker.comparisons.test_outputs import by_arm, drive_with_outputs
from tests.tracker.output_pictures import picture
from tracker.comparisons.summary import comparison_view
from tracker.enums import OutputStatus
from tracker.github.render import render_comment
from tracker.github.status import MAX_DESCRIPTION, commit_status
from tracker.models import Comparison

CASE = "qwen-image-t2i-1024"


def pr_comparison(session: Session, change_pct: float, base: object, head: object) -> Comparison:
    comparison = compare(session, rounds=2, pr_number=4242)
    drive_with_outputs(session, planted(change_pct), by_arm(base, head))  # type: ignore[arg-type]
    return comparison


def comment_of(session: Session, comparison: Comparison) -> str:
    return render_comment(comparison_view(session=session, comparison_id=comparison.id), public_url=None)


def test_a_faster_head_whose_output_changed_says_so_in_the_comment_and_the_status(session: Session) -> None:
    comparison = pr_comparison(session, -10.0, picture(), picture(change=25.0))
    (result,) = comparison.results
    assert result.output_status is OutputStatus.CHANGED
    assert result.output_psnr_db is not None
    psnr = f"{result.output_psnr_db:.1f}"
    lines = comment_of(session, comparison).splitlines()
    assert (
        lines[1] == f"### perftrack: comparison {comparison.id} — ✅ done — ⚠️ faster, but the output changed"
    )
    [row] = [line for line in lines if line.startswith(f"| `{CASE}` |")]
    assert "| 🟠 faster, but the output changed |" in row
    assert "improvement" not in row
    assert f"- `{CASE}`: output changed (PSNR {psnr} dB, SSIM {result.output_ssim:.3f})" in lines
    state, description = commit_status(comparison)
    assert (state, description) == ("failure", f"faster, but the output changed (PSNR {psnr} dB)")


def test_a_slower_head_whose_output_changed(session: Session) -> None:
    comparison = pr_comparison(session, 10.0, picture(), picture(change=25.0))
    lines = comment_of(session, comparison).splitlines()
    assert lines[1].endswith("— ⚠️ slower, and the output changed")
    assert any("| 🔴 slower, and the output changed |" in line for line in lines)
    state, description = commit_status(comparison)
    assert state == "failure"
    assert description.startswith("slower, and the output changed (PSNR ")


def test_an_output_change_without_a_speed_change_fails_the_status(session: Session) -> None:
    comparison = pr_comparison(session, 0.0, picture(), picture(change=25.0))
    assert comment_of(session, comparison).splitlines()[1].endswith("— ⚠️ output changed")
    state, description = commit_status(comparison)
    assert state == "failure"
    assert description.startswith("output changed (PSNR ")
    assert len(description) <= MAX_DESCRIPTION


def test_an_identical_output_is_one_line_and_leaves_the_verdict_alone(session: Session) -> None:
    comparison = pr_comparison(session, -10.0, picture(), picture())
    lines = comment_of(session, comparison).splitlines()
    assert lines[1] == f"### perftrack: comparison {comparison.id} — ✅ done"
    assert f"- `{CASE}`: output identical" in lines
    assert any("| 🟢 improvement |" in line for line in lines)
    assert commit_status(comparison) == ("success", "no regression (1 improvement(s), 1 results)")


def test_a_comparison_without_outputs_says_they_were_not_compared(session: Session) -> None:
    comparison = pr_comparison(session, 0.0, None, None)
    assert f"- `{CASE}`: output not compared (a side saved no output)" in comment_of(session, comparison)
    assert commit_status(comparison)[0] == "success"
