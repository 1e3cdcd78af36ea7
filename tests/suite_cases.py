"""Cases of a suite file as a runner receives them (defaults applied), read without the tracker.

Runner tests may not lean on the tracker's suite loader to build their inputs: the runner gets its
cases over HTTP, already resolved. This reads a suite's TOML the same way for the fields a
:class:`runners.jobspec.CaseSpec` holds.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from runners.jobspec import CaseSpec


def suite_cases(path: Path) -> list[CaseSpec]:
    """Every case of the suite file at ``path``, in file order."""
    suite = tomllib.loads(path.read_text(encoding="utf-8"))
    defaults = suite["defaults"]
    return [
        CaseSpec(
            slug=case["slug"],
            version=1,
            model=case["model"],
            task=case["task"],
            workload=case.get("workload", defaults["workload"]),
            mode=case.get("mode", defaults["mode"]),
            num_gpus=case["num_gpus"],
            requests=case.get("requests", 1),
            timeout_s=case.get("timeout_s", defaults["timeout_s"]),
            params=dict(case["params"]),
            flags=dict(case["flags"]),
        )
        for case in suite["cases"]
    ]


def suite_case(path: Path, slug: str) -> CaseSpec:
    """The case ``slug`` of the suite file at ``path``."""
    return next(case for case in suite_cases(path) if case.slug == slug)
