"""The overview's open regressions: established speed regressions only, shown with what paired
rounds measured; a suspect is none of them, and a changed output is listed apart, in dB."""

from __future__ import annotations

import re
from html import unescape

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import result_body
from tests.tracker.bench import LIMITS
from tests.tracker.views.alert_rows import (
    CASE,
    commit,
    output_alert,
    paired_rounds,
    stored_alert,
    unconfirmed_suspect,
)
from tracker.enums import AlertConfirmation, Direction, Verdict
from tracker.workflows.results import store_result
from wire import ResultIn


def _section(html: str, section_id: str) -> str:
    match = re.search(rf'<section[^>]*id="{section_id}".*?</section>', html, re.S)
    assert match, f"no #{section_id}"
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", match.group(0))).split())


def test_open_regressions_leave_out_suspects_and_output_changes(client: TestClient, session: Session) -> None:
    confirmed = stored_alert(session, 2, confirmation=AlertConfirmation.CONFIRMED, change_pct=9.4)
    paired_rounds(
        session,
        confirmed,
        change_pct=8.8,
        interval=(8.0, 9.6),
        rounds=4,
        note="confirmed by 4 paired rounds",
        verdict=Verdict.REGRESSION,
    )
    suspect = unconfirmed_suspect(
        session, 4, direction=Direction.REGRESSION, change_pct=3.6, after_value=103.6
    )
    output = output_alert(session, 6)
    _latest_run(session, 8)
    html = client.get("/").text
    regressions = _section(html, "open-regressions")
    assert regressions.startswith("1 open regression ")
    assert f"{CASE} on H200 +8.80 % [+8.00, +9.60] % 100.0 ms → 108.8 ms since" in regressions
    assert "+9.4" not in regressions  # detection's first estimate, not what the rounds measured
    assert f'data-alert="{suspect.id}"' not in html
    changed = _section(html, "open-output-changes")
    assert changed.startswith("1 output change ")
    assert "output changed: PSNR 27.1 dB, SSIM 0.81 (tolerance 40 dB)" in changed
    assert " ms" not in changed
    assert "-32.3 %" not in html  # the PSNR below the tolerance, read as a speed-up, nowhere
    cell = re.search(rf'<td class="cell[^"]*" data-case="{CASE}" data-hardware="H200">.*?</td>', html, re.S)
    assert cell
    assert "1 open" in cell.group(0)
    assert f'href="/alerts/{confirmed.id}"' in cell.group(0)  # its newest regression: not the output's
    assert "+8.8 % at" in cell.group(0)
    assert "output changed" in cell.group(0)
    assert output.id != confirmed.id


def test_no_open_regression_when_only_suspects_and_outputs_are_open(
    client: TestClient, session: Session
) -> None:
    unconfirmed_suspect(session, 4, direction=Direction.REGRESSION)
    stored_alert(session, 8, confirmation=AlertConfirmation.PENDING)
    output_alert(session, 6)
    _latest_run(session, 10)
    html = client.get("/").text
    assert 'class="callout regression-list"' not in html
    assert re.search(r'<p class="callout calm" id="open-regressions">No open regressions\.</p>', html)
    assert "1 output change" in _section(html, "open-output-changes")
    cell = re.search(rf'<td class="cell[^"]*" data-case="{CASE}" data-hardware="H200">.*?</td>', html, re.S)
    assert cell
    assert "alerting" not in cell.group(0).split(">", 1)[0]
    assert "badge regression" not in cell.group(0)
    assert "badge past" not in cell.group(0)  # no recent regression either


def _latest_run(session: Session, index: int) -> None:
    """An imported run of the case at commit ``index``: the series' latest point."""
    head = commit(session, index)
    latest = result_body(commit={"sha": head.sha, "committed_at": head.committed_at.isoformat()})
    store_result(session=session, result=ResultIn.model_validate(latest), limits=LIMITS)
