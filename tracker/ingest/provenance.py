"""Whether a perf dump says it measured the commit its upload is filed under.

sglang writes ``commit_hash`` into every ``--perf-dump-path`` JSON from ``SGLANG_GIT_COMMIT`` (else
``git rev-parse HEAD`` of its own package, else ``"N/A"``; ``runtime/utils/perf_logger.py``). The runner
sets that variable to the candidate it built, so a dump naming another commit means the process that
ran was not the candidate's build (a stale install, an sglang that ignores the variable), or an
import pairs a dump with the wrong commit. The run is kept, with a warning that says so.
"""

from __future__ import annotations

import re

from wire import JobResultIn, MeasurementIn, ResultIn

_SHA = re.compile(r"^[0-9a-f]{7,64}$")


def dump_commit_warning(result: MeasurementIn) -> str | None:
    """A warning when the dump's ``commit_hash`` is a sha that is not the uploaded commit's."""
    dumped = (result.perf_dump or {}).get("commit_hash")
    if not isinstance(dumped, str) or not _SHA.match(dumped.strip().lower()):
        return None  # "N/A", absent or not a sha: nothing to check
    expected = _expected_sha(result)
    if expected is None:
        return None
    dumped = dumped.strip().lower()
    if expected.startswith(dumped) or dumped.startswith(expected):
        return None
    return (
        f"the perf dump says it measured commit {dumped[:12]}, not {expected[:12]}: the process that ran "
        "was not this candidate's build (SGLANG_GIT_COMMIT did not reach it), or the dump belongs to "
        "another run"
    )


def _expected_sha(result: MeasurementIn) -> str | None:
    if isinstance(result, JobResultIn):
        return result.build.head_sha.lower() if result.build.head_sha else None
    if isinstance(result, ResultIn) and not result.patches:  # with patches the head is not known here
        return result.commit.sha.lower()
    return None
