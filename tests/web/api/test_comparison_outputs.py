"""Head's output against base's where people read a comparison: ``output`` and ``label`` in
GET /api/v1/comparisons/{id} and the list, the comparison page's line and thumbnails, and the
reference PNGs they load."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.tracker.comparisons.test_comparisons import compare, planted
from tests.tracker.comparisons.test_outputs import by_arm, drive_with_outputs
from tests.tracker.output_pictures import picture

CASE = "qwen-image-t2i-1024"


def changed_comparison(session: Session) -> int:
    comparison = compare(session, rounds=2, pr_number=4242)
    drive_with_outputs(session, planted(-10.0), by_arm(picture(), picture(change=25.0)))
    return comparison.id


def test_the_api_says_the_output_changed_and_never_a_plain_improvement(
    client: TestClient, session: Session
) -> None:
    comparison_id = changed_comparison(session)
    detail = client.get(f"/api/v1/comparisons/{comparison_id}").json()
    assert detail["label"] == "faster, but the output changed"
    [result] = detail["results"]
    assert result["verdict"] == "improvement"
    assert result["label"] == "faster, but the output changed"
    output: dict[str, Any] = result["output"]
    assert output["status"] == "changed"
    assert output["changed"] is True
    assert 15.0 < output["psnr_db"] < 40.0
    assert 0.0 < output["ssim"] < 0.95
    assert output["tolerance_db"] == 40.0
    assert output["summary"] == (
        f"output changed (PSNR {output['psnr_db']:.1f} dB, SSIM {output['ssim']:.3f}; tolerance 40 dB)"
    )
    heads = [item["head"]["run_id"] for item in result["rounds"]]
    bases = [item["base"]["run_id"] for item in result["rounds"]]
    assert (output["base_run_id"], output["head_run_id"]) == (max(bases), max(heads))
    first = result["diagnosis"][0]  # the picture is said before any mechanism or timing
    assert first["kind"] == "output"
    assert first["summary"] == (
        f"output changed: PSNR {output['psnr_db']:.1f} dB, SSIM {output['ssim']:.3f} against base (tolerance 40 dB)"
    )
    [listed] = client.get("/api/v1/comparisons").json()
    assert listed["label"] == detail["label"]
    assert listed["results"][0]["output"] == output
    # Each arm's run page says the same of its round's other arm.
    head_page = client.get(f"/runs/{heads[0]}").text
    assert f"base run {bases[0]} of comparison {comparison_id}" in head_page
    assert '<p id="output-check" class="bad">output changed (PSNR ' in head_page
    base_page = client.get(f"/runs/{bases[0]}").text
    assert f"head run {heads[0]} of comparison {comparison_id}" in base_page


def test_identical_and_missing_outputs_in_the_api(client: TestClient, session: Session) -> None:
    same = compare(session, rounds=2)
    drive_with_outputs(session, planted(0.0), by_arm(picture(), picture()))
    [result] = client.get(f"/api/v1/comparisons/{same.id}").json()["results"]
    assert result["output"]["status"] == "identical"
    assert result["output"]["summary"] == "output identical"
    assert (result["output"]["psnr_db"], result["output"]["ssim"]) == (None, None)
    assert result["label"] == result["verdict"].replace("_", " ")
    assert all(finding["kind"] != "output" for finding in result["diagnosis"])

    blind = compare(session, rounds=2, pr_number=7)
    drive_with_outputs(session, planted(0.0), by_arm(picture(), None))
    [result] = client.get(f"/api/v1/comparisons/{blind.id}").json()["results"]
    assert result["output"]["status"] == "missing"
    assert result["output"]["summary"] == "output not compared (no saved output of head)"
    assert result["output"]["head_run_id"] is None
    assert result["output"]["base_run_id"] is not None


def test_a_comparison_without_runs_is_not_checked_yet(client: TestClient, session: Session) -> None:
    comparison = compare(session, rounds=2)
    detail = client.get(f"/api/v1/comparisons/{comparison.id}").json()
    assert detail["label"] == "queued"
    [result] = detail["results"]
    assert result["output"]["status"] is None
    assert result["output"]["summary"] == "output not checked yet"
    assert result["label"] == "pending"


def test_the_page_shows_the_check_and_both_thumbnails(client: TestClient, session: Session) -> None:
    comparison_id = changed_comparison(session)
    output = client.get(f"/api/v1/comparisons/{comparison_id}").json()["results"][0]["output"]
    html = client.get(f"/comparisons/{comparison_id}").text
    assert f"output changed (PSNR {output['psnr_db']:.1f} dB, SSIM {output['ssim']:.3f}" in html
    assert "faster, but the output changed" in html
    for run_id in (output["base_run_id"], output["head_run_id"]):
        assert f'src="/runs/{run_id}/output/0.png"' in html
        image = client.get(f"/runs/{run_id}/output/0.png")
        assert image.status_code == 200
        assert image.headers["content-type"] == "image/png"
        assert image.content.startswith(b"\x89PNG")
    assert client.get(f"/runs/{output['base_run_id']}/output/1.png").status_code == 404
    listing = client.get("/comparisons").text
    assert '<span class="verdict improvement output-changed">faster, but the output changed</span>' in listing
