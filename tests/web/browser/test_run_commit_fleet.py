"""Run, commit, runners and jobs pages in Chromium, on the shared dashboard data."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.web.browser.conftest import Dashboard, shoot
from tests.web.browser.polling import wait_for_js
from tests.web.dashboard_data import BROKEN, CULPRIT, HOSTILE_TITLE, sha

COMMAND = "sglang generate --model-path Qwen/Qwen-Image --prompt 'a cat & <dog>' --enable-torch-compile"
LOG = (
    "[05-22 18:04:13] [TextEncodingStage] started...\n"
    "[05-22 18:04:15] [TextEncodingStage] finished in 2.1034 seconds\n"
    "[05-22 18:04:15] [DenoisingStage] started...\n"
    " 33%|███▎      | 1/3 [00:01<00:02, 1.21s/it]\n"
    " 67%|██████▋   | 2/3 [00:02<00:01, 1.00s/it]\n"
    "<script>window.pwned=1</script> plain line\n"
    "[05-22 18:04:18] [DenoisingStage] finished in 3.0000 seconds\n"
)


@pytest.fixture(scope="module")
def rich_run(dashboard: Dashboard) -> int:
    """An import carrying a command line, an environment and a log, as a runner would send."""
    body = {
        "case": "qwen-image-t2i-1024",
        "hardware": "H200",
        "commit": {"sha": sha(CULPRIT)},
        "step_times_ms": [1210.0, 1001.0, 1000.0],
        "stages": [
            {"name": "TextEncodingStage", "duration_ms": 2103.4},
            {"name": "DenoisingStage", "duration_ms": 3000.0},
        ],
        "compile": {"graph_breaks": 2, "recompiles": 0, "unique_graphs": 3, "frames_compiled": 3},
        "environment": {
            "gpu": "NVIDIA H200",
            "gpu_driver": "570.86",
            "torch": "2.9.0",
            "sglang": "0.5.4",
            "gpu_sm_clock_mhz_before": [1980],
            "gpu_sm_clock_mhz_after": [1755],
            "gpu_temperature_c_before": [41],
            "gpu_temperature_c_after": [67],
        },
        "command": COMMAND,
        "raw_log": LOG,
    }
    response = httpx.post(
        dashboard.url + "/api/v1/results",
        json=body,
        headers={"Authorization": f"Bearer {dashboard.admin_token}"},
    )
    assert response.status_code == 201, response.text
    return int(response.json()["run_id"])


def _nightly_run(dashboard: Dashboard, index: int, *, failed: bool = False) -> int:
    html = httpx.get(f"{dashboard.url}/commits/{sha(index)[:9]}").text
    rows = re.findall(r'<tr class="(\w+)[^"]*" data-run="(\d+)"', html)
    return next(int(run) for status, run in rows if (status == "failed") == failed)


def test_run_page_chart_copy_and_log_filter(dashboard: Dashboard, page: Any, rich_run: int) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=dashboard.url)
    page.goto(f"{dashboard.url}/runs/{rich_run}")
    wait_for_js(page, "document.getElementById('step-chart').data !== undefined")
    assert page.evaluate("document.getElementById('step-chart').data[0].x.length") == 3
    assert page.locator("#environment").inner_text().count("NVIDIA H200") == 1
    assert "1980" in page.locator("#gpu-state").inner_text()
    page.click("#copy-command")
    wait_for_js(page, "document.getElementById('copy-command').textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == COMMAND
    lines = page.locator("#log .ln")
    assert lines.count() == 7
    page.fill("#log-filter", "denoisingstage")
    assert page.locator("#log .ln:not([hidden])").count() == 2
    assert "log=denoisingstage" in page.url
    page.fill("#log-filter", "")
    assert page.locator("#log .ln.stage").count() == 4
    assert page.locator("#log .ln.step").count() == 2
    assert page.evaluate("window.pwned") is None
    assert page.console_errors == []
    shoot(page, "run")


def test_nightly_run_has_thirty_steps_and_its_job(dashboard: Dashboard, page: Any) -> None:
    run_id = _nightly_run(dashboard, 10)
    page.goto(f"{dashboard.url}/runs/{run_id}")
    wait_for_js(page, "document.getElementById('step-chart').data !== undefined")
    assert page.evaluate("document.getElementById('step-chart').data[0].x.length") == 30
    assert page.locator("#job-reason").inner_text() == "nightly"
    assert page.console_errors == []


def test_failed_run_says_why(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/runs/{_nightly_run(dashboard, BROKEN, failed=True)}")
    assert "build failed: conflict" in page.locator("#failure").inner_text()
    assert page.console_errors == []
    shoot(page, "run-failed")


def test_commit_page_lists_its_results_and_alerts(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/commits/{sha(CULPRIT)[:8]}")
    plain = page.locator("#results-plain tbody tr")
    assert plain.count() >= 1  # its bisect run (nightly runs skipped it)
    assert "wan2.1-t2v-1.3b" in page.locator("#results-plain").inner_text()
    assert page.locator("#alerts-culprit tbody tr, #alerts-first-bad tbody tr").count() >= 1
    assert page.console_errors == []
    shoot(page, "commit")


def test_hostile_commit_title_is_text(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/runs/1")  # the imported Qwen-Image runs come first
    assert page.evaluate("window.pwned") is None
    page.click(".facts a[href^='/commits/']")
    assert page.locator("#commit-title").inner_text() == HOSTILE_TITLE
    assert page.evaluate("window.pwned") is None
    assert page.console_errors == []


def test_runners_online_and_offline(dashboard: Dashboard, page: Any) -> None:
    page.goto(dashboard.url + "/runners")
    # The fixture's clock is in the past, so the node it ran on is offline now too; both show a state.
    assert "offline" in page.locator('tr[data-runner="gb300-node-02"] .state').inner_text()
    assert page.locator('tr[data-runner="h200-node-07"] .state').count() == 1
    assert "build failed: conflict" in page.locator('tr[data-runner="h200-node-07"]').inner_text()
    assert page.console_errors == []
    shoot(page, "runners")


def test_jobs_queue_and_filters(dashboard: Dashboard, page: Any) -> None:
    page.goto(dashboard.url + "/jobs")
    assert "3 queued" in page.locator('#depth [data-hardware="GB300"]').inner_text()
    assert page.locator("#jobs-queued tbody tr").count() == 3
    page.select_option('select[name="state"]', "failed")
    page.wait_for_url(re.compile(r"state=failed"))
    assert "build failed: conflict" in page.locator("#jobs-failed").inner_text()
    assert page.console_errors == []
    page.goto(dashboard.url + "/jobs")
    shoot(page, "jobs")


@pytest.mark.parametrize("path", ["/runs/{run}", "/commits/{sha}", "/runners", "/jobs"])
def test_no_horizontal_scroll_on_a_phone(
    dashboard: Dashboard, browser: Any, rich_run: int, path: str
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    phone = context.new_page()
    phone.goto(dashboard.url + path.format(run=rich_run, sha=sha(CULPRIT)))
    width = phone.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert width <= 390
