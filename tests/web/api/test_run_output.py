"""A run's saved output: stored from an upload, shown on the run page and in the run's JSON, its
reference PNGs served; a reference that does not decode is a 422 naming it, never a 500. The run
page checks the output against what the run is compared with: a comparison arm's against the other
arm of its round, a series run's against the commit before it."""

from __future__ import annotations

import base64
import hashlib
import io
import re

import numpy as np
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.factories import result_body
from tests.tracker.comparisons.test_comparisons import compare, planted
from tests.tracker.comparisons.test_outputs import by_arm, drive_with_outputs
from tests.tracker.output_pictures import picture
from tracker.enums import Arm
from tracker.models import Comparison, Job, Run

DIGEST = "sha256:" + "5e" * 32


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (180, 60, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def _output(png: bytes) -> dict[str, object]:
    return {
        "digest": DIGEST,
        "width": 256,
        "height": 256,
        "file_name": "A_red_fox_20261202-101500_1a2b3c4d.png",
        "frames": [{"png_base64": base64.b64encode(png).decode("ascii")}],
    }


def _post(client: TestClient, token: str, body: dict[str, object]) -> int:
    response = client.post("/api/v1/results", json=body, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.text
    run_id: int = response.json()["run_id"]
    return run_id


def test_the_run_page_shows_the_output_and_its_thumbnail(client: TestClient, runner_token: str) -> None:
    png = _png(256, 256)
    run_id = _post(client, runner_token, result_body(output=_output(png)))
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert f"output: <code>{DIGEST}</code> (image 256×256)" in page.text
    assert f'<img src="/runs/{run_id}/output/0.png" width="256" height="256"' in page.text
    for url in (f"/runs/{run_id}/output/0.png", f"/api/v1/runs/{run_id}/output/0.png"):
        served = client.get(url)
        assert served.status_code == 200, url
        assert served.headers["content-type"] == "image/png"
        assert served.content == png  # the lossless reference, byte for byte
        assert client.get(url.replace("/0.png", "/1.png")).status_code == 404
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["output"] == {
        "digest": DIGEST,
        "media": "image",
        "width": 256,
        "height": 256,
        "frame_count": 1,
        "file_name": "A_red_fox_20261202-101500_1a2b3c4d.png",
        "references": [
            {
                "position": 0,
                "frame_index": 0,
                "width": 256,
                "height": 256,
                "url": f"/api/v1/runs/{run_id}/output/0.png",
            }
        ],
    }


def test_a_run_without_output_shows_none(client: TestClient, runner_token: str) -> None:
    run_id = _post(client, runner_token, result_body())
    assert 'id="output"' not in client.get(f"/runs/{run_id}").text
    assert client.get(f"/api/v1/runs/{run_id}").json()["output"] is None
    assert client.get(f"/api/v1/runs/{run_id}/output/0.png").status_code == 404
    assert client.get(f"/api/v1/runs/{run_id + 1000}/output/0.png").status_code == 404


def test_a_reference_that_does_not_decode_is_refused_naming_it(client: TestClient, runner_token: str) -> None:
    broken = b"\x89PNG\r\n\x1a\n" + b"not really a png"
    too_big = _png(300, 20)
    for png, words in ((broken, "not a readable PNG"), (too_big, "at most 256 pixels")):
        response = client.post(
            "/api/v1/results",
            json=result_body(output=_output(png)),
            headers={"Authorization": f"Bearer {runner_token}"},
        )
        assert response.status_code == 422, response.text
        assert "output.frames.0.png_base64" in response.text
        assert words in response.text


def _picture_output(pixels: np.ndarray) -> dict[str, object]:
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buffer, format="PNG")
    return {
        "digest": "sha256:" + hashlib.sha256(pixels.tobytes()).hexdigest(),
        "width": pixels.shape[1],
        "height": pixels.shape[0],
        "frames": [{"png_base64": base64.b64encode(buffer.getvalue()).decode("ascii")}],
    }


def test_the_run_page_says_how_the_output_compares_with_the_commit_before(
    client: TestClient, runner_token: str
) -> None:
    ramp = np.linspace(20, 230, 64)
    smooth = np.stack([np.add.outer(ramp, ramp) / 2, np.tile(ramp, (64, 1)), np.tile(ramp[:, None], 64)], -1)
    before = np.clip(smooth, 0, 255).astype(np.uint8)
    after = np.clip(smooth + np.random.default_rng(1).normal(0, 20, smooth.shape), 0, 255).astype(np.uint8)
    commits = [
        {"sha": sha, "title": title, "committed_at": when}
        for sha, title, when in (
            ("1111111", "before", "2026-03-01T10:00:00Z"),
            ("2222222", "neutral", "2026-03-02T10:00:00Z"),
            ("3333333", "changes the picture", "2026-03-03T10:00:00Z"),
        )
    ]
    first = _post(client, runner_token, result_body(commit=commits[0], output=_picture_output(before)))
    second = _post(client, runner_token, result_body(commit=commits[1], output=_picture_output(before)))
    third = _post(client, runner_token, result_body(commit=commits[2], output=_picture_output(after)))
    assert client.get(f"/runs/{first}").text.count('id="output-check"') == 0  # nothing before it
    same = client.get(f"/runs/{second}").text
    assert (
        f'output identical, against <a href="/runs/{first}">run {first} of 1111111 (the commit before)</a>'
        in same
    )
    changed = client.get(f"/runs/{third}").text
    assert '<p id="output-check" class="bad">output changed (PSNR ' in changed
    assert f'<a href="/runs/{second}">run {second} of 2222222 (the commit before)</a>' in changed


def _arm_runs(session: Session, comparison: Comparison) -> dict[tuple[int | None, Arm | None], int]:
    """The run of each (round, arm) of a comparison."""
    rows = session.execute(
        select(Job.comparison_round, Job.arm, Run.id)
        .join(Run, Run.job_id == Job.id)
        .where(Job.comparison_id == comparison.id)
    ).all()
    return {(round_number, arm): run_id for round_number, arm, run_id in rows}


def _check_line(html: str) -> str:
    """The run page's output-check paragraph."""
    [line] = re.findall(r'<p id="output-check"[^>]*>.*?</p>', html)
    return str(line)


def test_an_arm_s_run_page_checks_its_output_against_the_other_arm_of_its_round(
    client: TestClient, session: Session
) -> None:
    comparison = compare(session, rounds=2, pr_number=4242)
    drive_with_outputs(session, planted(-10.0), by_arm(picture(), picture(change=25.0)))
    [result] = comparison.results
    assert result.output_psnr_db is not None
    assert result.output_ssim is not None
    changed = f"output changed (PSNR {result.output_psnr_db:.1f} dB, SSIM {result.output_ssim:.3f}; tolerance 40 dB)"
    runs = _arm_runs(session, comparison)
    assert len(runs) == 4
    for round_number in (1, 2):
        base, head = runs[round_number, Arm.BASE], runs[round_number, Arm.HEAD]
        # Head's page: its output against its own round's base, the same check as the comparison's.
        assert _check_line(client.get(f"/runs/{head}").text) == (
            f'<p id="output-check" class="bad">{changed}, against '
            f'<a href="/runs/{base}">base run {base} of comparison {comparison.id}</a></p>'
        )
        # Base's page: the same check (head's output against base's), naming the head run.
        assert _check_line(client.get(f"/runs/{base}").text) == (
            f'<p id="output-check" class="bad">{changed}, against '
            f'<a href="/runs/{head}">head run {head} of comparison {comparison.id}</a></p>'
        )


def test_an_arm_whose_output_is_identical_to_the_other_arm_s_says_so(
    client: TestClient, session: Session
) -> None:
    comparison = compare(session, rounds=2)
    drive_with_outputs(session, planted(0.0), by_arm(picture(), picture()))
    runs = _arm_runs(session, comparison)
    base, head = runs[2, Arm.BASE], runs[2, Arm.HEAD]
    assert _check_line(client.get(f"/runs/{head}").text) == (
        '<p id="output-check" class="">output identical, against '
        f'<a href="/runs/{base}">base run {base} of comparison {comparison.id}</a></p>'
    )
    assert "output identical, against " in _check_line(client.get(f"/runs/{base}").text)


def test_an_arm_whose_other_arm_saved_no_output_shows_its_own_without_a_check(
    client: TestClient, session: Session
) -> None:
    comparison = compare(session, rounds=1)
    drive_with_outputs(session, planted(0.0), by_arm(picture(), None))
    runs = _arm_runs(session, comparison)
    base_page = client.get(f"/runs/{runs[1, Arm.BASE]}").text
    assert f'<img src="/runs/{runs[1, Arm.BASE]}/output/0.png"' in base_page
    assert 'id="output-check"' not in base_page  # nothing to compare with: no line, and no other run
    assert 'id="output"' not in client.get(f"/runs/{runs[1, Arm.HEAD]}").text
