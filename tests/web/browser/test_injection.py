"""HTML injection rendered inert: hostile commit titles and authors, PR text and a javascript: URL,
case titles and models, runner names and labels, failure reasons, triage reasons and log lines,
stored through the tracker's own functions, are shown as literal text on every page and run no
script (a flag the payloads would set stays unset; no dialog opens)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from tests.factories import regression_payloads
from tests.live import live_server
from tests.tracker.bench import LIMITS
from tracker import db
from tracker.catalog.cases import get_current_case, get_hardware_kind
from tracker.comparisons.creation import create_comparison
from tracker.detection.triage import triage_alert
from tracker.enums import JobReason
from tracker.models import Alert, Comparison, Run, utcnow
from tracker.queue.jobs import enqueue_job
from tracker.queue.runners import register_runner
from tracker.settings import Settings
from tracker.vcs.commits import ensure_candidate
from tracker.workflows.results import store_result
from wire import ResultIn

SCRIPT = "<script>window.__pwned='script'</script>"
IMG = "<img src=x onerror=\"window.__pwned='img'\">"
SVG = "\"'><svg onload=\"window.__pwned='svg'\">"
PAYLOAD = f"{SCRIPT}{IMG}{SVG}"
JS_URL = "javascript:window.__pwned='link'"
SLUG = "hostile-case"
COMMIT_TITLE = f"Title {PAYLOAD}"
AUTHOR = f"Author {IMG}"
CASE_TITLE = f"Case {IMG}"
MODEL = f"Model/{SCRIPT}"
RUNNER_HOST = f"host {SVG}"
LABEL = f"rack {IMG}"
FAILURE = f"OOM {PAYLOAD}"
TRIAGE = f"triage {PAYLOAD}"
LOG_LINE = f"log line {PAYLOAD}"
COMMAND = f"/perf {PAYLOAD}"
SUITE = f"""
[suite]
name = "hostile"
description = {json.dumps("Hostile text in every free-text field " + IMG)}

[repository]
name = "sglang"
url = "https://github.com/sgl-project/sglang.git"

[hardware.H200]
description = {json.dumps("H200 " + IMG)}

[[cases]]
slug = "{SLUG}"
title = {json.dumps(CASE_TITLE)}
model = {json.dumps(MODEL)}
family = "hostile"
task = "t2i"
hardware = ["H200"]

[cases.params]
prompt = {json.dumps(PAYLOAD)}
width = 1024
height = 1024
num-inference-steps = 50
seed = 42
"""


@dataclass(frozen=True)
class Hostile:
    url: str
    runs: list[int]
    failed_run: int
    alert: int
    comparison: int
    sha: str


def _fill(settings: Settings) -> tuple[list[int], int, int, int, str]:
    engine = db.make_engine(settings.effective_database_url)
    try:
        with db.session_scope(db.make_session_factory(engine)) as session:
            for body in regression_payloads():
                body["case"] = SLUG
                body["commit"] |= {"title": COMMIT_TITLE, "author_name": AUTHOR}
                body["raw_log"] = LOG_LINE + "\n" + body.get("raw_log", "")
                store_result(session=session, result=ResultIn.model_validate(body), limits=LIMITS)
            sha = regression_payloads()[1]["commit"]["sha"]
            failed = ResultIn.model_validate(
                {
                    "case": SLUG,
                    "hardware": "H200",
                    "commit": {
                        "sha": "abcdef1",
                        "title": COMMIT_TITLE,
                        "committed_at": "2026-05-22T09:00:00Z",
                    },
                    "status": "failed",
                    "failure_reason": FAILURE,
                    "raw_log": LOG_LINE,
                }
            )
            failed_run = store_result(session=session, result=failed, limits=LIMITS).run.id
            alert = session.scalars(select(Alert)).first()
            assert alert is not None
            triage_alert(
                session=session,
                alert_id=alert.id,
                status="open",
                actor="on-call",
                reason=TRIAGE,
                now=utcnow(),
            )
            case = get_current_case(session=session, slug=SLUG)
            h200 = get_hardware_kind(session=session, name="H200")
            runs = [run.id for run in session.scalars(select(Run).order_by(Run.id))]
            base = session.get(Run, runs[0])
            assert base is not None
            candidate = ensure_candidate(session=session, base=base.commit, patches=[])
            comparison = create_comparison(
                session=session,
                base=candidate,
                head=ensure_candidate(session=session, base=base.commit, patches=["refs/pull/43601/head"]),
                cases=[SLUG],
                hardware=["H200"],
                requested_by=f"someone {IMG}",
                pr_number=43601,
                pr_url="https://github.com/sgl-project/sglang/pull/43601",
                command=COMMAND,
            )
            # Stored by an older version or another path: the page must not make it a link.
            session.get(Comparison, comparison.id).pr_url = JS_URL  # type: ignore[union-attr]
            register_runner(
                session=session,
                name="h200-hostile",
                hardware=h200,
                gpu_count=8,
                labels={"rack": LABEL},
                version=f"v{SCRIPT}"[:64],
                host=RUNNER_HOST,
                token=None,
                now=utcnow() - dt.timedelta(minutes=1),
            )
            enqueue_job(
                session=session,
                candidate=candidate,
                case=case,
                hardware=h200,
                reason=JobReason.MANUAL,
                purpose=f"p {IMG}"[:64],
                requested_by=f"r {SCRIPT}"[:64],
            )
            return runs, failed_run, alert.id, comparison.id, sha
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    root = tmp_path_factory.mktemp("hostile")
    suites = root / "suites"
    suites.mkdir()
    (suites / "hostile.toml").write_text(SUITE)
    settings = Settings(database_url=f"sqlite:///{root / 'hostile.db'}", data_dir=root, suite_dir=suites)
    with live_server(settings) as url:
        runs, failed_run, alert, comparison, sha = _fill(settings)
        yield Hostile(url=url, runs=runs, failed_run=failed_run, alert=alert, comparison=comparison, sha=sha)


def _pages(h: Hostile) -> list[tuple[str, list[str]]]:
    """Each page and the hostile texts it must show literally."""
    return [
        ("/", [CASE_TITLE]),
        (f"/series/{SLUG}/H200", [MODEL, COMMIT_TITLE]),
        (f"/runs/{h.runs[1]}", [COMMIT_TITLE, LOG_LINE]),
        (f"/runs/{h.failed_run}", [FAILURE]),
        (f"/commits/{h.sha}", [COMMIT_TITLE, AUTHOR]),
        ("/alerts", []),
        (f"/alerts/{h.alert}", [TRIAGE]),
        ("/comparisons", []),
        (f"/comparisons/{h.comparison}", [COMMAND]),
        ("/runners", ["h200-hostile", RUNNER_HOST]),
        ("/jobs", []),
        ("/nightly", []),
    ]


def test_no_payload_runs_and_the_text_is_shown_literally(hostile: Hostile, page: Any) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    shown_anywhere = ""
    for path, expected in _pages(hostile):
        response = page.goto(hostile.url + path)
        assert response is not None
        assert response.status == 200, path
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__pwned") is None, path
        text = page.inner_text("body")
        shown_anywhere += text
        for literal in expected:
            assert " ".join(literal.split()) in " ".join(text.split()), (path, literal)
        # No element the payloads would create exists in the document.
        assert page.locator("img[src='x'], svg[onload], script:has-text('__pwned')").count() == 0, path
    assert dialogs == []
    assert "window.__pwned" in shown_anywhere


def test_a_javascript_pr_url_is_not_a_link(hostile: Hostile, page: Any) -> None:
    page.goto(f"{hostile.url}/comparisons/{hostile.comparison}")
    assert page.locator("a[href^='javascript:']").count() == 0
    assert "PR #43601" in page.inner_text("body")
    for path, _expected in _pages(hostile):
        page.goto(hostile.url + path)
        hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
        assert not [href for href in hrefs if href.strip().lower().startswith("javascript:")], path


def test_the_raw_log_endpoint_is_plain_text_and_not_sniffed(hostile: Hostile, page: Any) -> None:
    response = page.goto(f"{hostile.url}/api/v1/runs/{hostile.runs[1]}/log")
    assert response is not None
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert page.evaluate("window.__pwned") is None
    assert LOG_LINE in page.inner_text("body")


def test_the_payloads_do_fire_when_rendered_as_html(page: Any) -> None:
    # The control: the same payloads, unescaped, set the flag; so the tests above can fail.
    for payload in (SCRIPT, IMG, SVG):
        page.set_content(f"<div title='x'>{payload}</div>")
        page.wait_for_function("window.__pwned !== undefined", timeout=5000)
        assert page.evaluate("window.__pwned") in ("script", "img", "svg")
