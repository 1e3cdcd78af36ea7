"""A perf dump that names another commit than its upload is kept, with a warning that says so."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import job_result
from tracker.enums import RunSource
from tracker.ingest.provenance import dump_commit_warning
from tracker.ingest.rows import run_rows
from wire import ResultIn

HEAD = "669a9bd3c1e84f0d9a2b7e5f6c3d1a0b9e8f7a6c"
OTHER = "4739f2e0a1b2c3d4e5f60718293a4b5c6d7e8f90"


def imported(dump: dict[str, Any], *, sha: str = HEAD, patches: list[str] | None = None) -> ResultIn:
    return ResultIn.model_validate(
        {
            "case": "qwen-image-t2i-1024",
            "hardware": "H200",
            "commit": {"sha": sha},
            "patches": patches or [],
            "status": "ok",
            "step_times_ms": [263.7, 264.1],
            "perf_dump": dump,
        }
    )


@pytest.mark.parametrize("dumped", [HEAD, HEAD[:7], HEAD.upper(), "N/A", "", None, "not a sha"])
def test_a_dump_of_the_candidate_or_without_a_sha_passes(dumped: str | None) -> None:
    result = job_result(1, perf_dump={"commit_hash": dumped}, build={"head_sha": HEAD})
    assert dump_commit_warning(result) is None


def test_a_job_whose_dump_names_another_commit_is_warned_about() -> None:
    result = job_result(1, perf_dump={"commit_hash": OTHER}, build={"head_sha": HEAD})
    warning = dump_commit_warning(result)
    assert warning is not None
    assert f"measured commit {OTHER[:12]}, not {HEAD[:12]}" in warning
    rows = run_rows(result, key="k" * 8, digest="d" * 64, source=RunSource.JOB)
    assert rows.run["warnings"] == [warning]
    assert rows.run["status"].value == "ok"  # kept, not refused


def test_imports_are_checked_against_their_commit_unless_patched() -> None:
    assert dump_commit_warning(imported({"commit_hash": OTHER})) is not None
    assert dump_commit_warning(imported({"commit_hash": HEAD[:10]}, sha=HEAD)) is None
    # With patches on top, the dump names the head after them, which the tracker does not know.
    assert dump_commit_warning(imported({"commit_hash": OTHER}, patches=["refs/pull/7/head"])) is None
    # A job upload without a head (an older runner) is not checked.
    assert dump_commit_warning(job_result(1, perf_dump={"commit_hash": OTHER})) is None
