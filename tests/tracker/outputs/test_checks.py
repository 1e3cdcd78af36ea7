"""Output checks between two sides' runs: digests first, then PSNR/SSIM, each pair scored once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from tests.tracker.diagnosis_runs import Shape, history
from tests.tracker.output_pictures import give_output, picture
from tracker.enums import OutputStatus
from tracker.outputs.checks import check_outputs


def test_a_pair_is_decoded_and_scored_once(session: Session) -> None:
    [[before, *_], [after, *_]] = history(session, [Shape(), Shape()], runs=1)
    give_output(session, before.id, picture())
    give_output(session, after.id, picture(change=25.0))
    first = check_outputs(session, before=[before.id], after=[after.id], tolerance_db=40.0)
    assert first.status is OutputStatus.CHANGED
    assert first.psnr_db is not None
    assert first.psnr_db < 40.0
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]))

    engine = session.get_bind()
    event.listen(engine, "before_cursor_execute", count)
    try:
        again = check_outputs(session, before=[before.id], after=[after.id], tolerance_db=40.0)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert again == first
    assert not any("run_output_frames" in statement for statement in statements)  # not read again
    # The score is kept, not the verdict: a stricter tolerance calls the same pair differently.
    lenient = check_outputs(session, before=[before.id], after=[after.id], tolerance_db=first.psnr_db - 1)
    assert lenient.status is OutputStatus.SAME
