"""Suite files (TOML): the benchmark cases maintainers run, with their parameters and thresholds.

A suite names its repository, the hardware kinds it knows, defaults, and ``[[cases]]``. Flags are
written as ``sglang`` spells them: ``true`` renders ``--flag``, a string or number renders
``--flag value`` (``dit-cpu-offload = "false"`` → ``--dit-cpu-offload false``), ``false`` omits it.
Loading validates everything and reports the first problems with file, line and field. The file's
tables and fields, and where a problem lies, are :mod:`tracker.catalog.suite_schema`; this module
applies the defaults, names the problem's file and line, and loads suites from files.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracker.catalog.suite_lines import index_lines, line_of
from tracker.catalog.suite_schema import (
    FlagValue,
    HardwareSpec,
    RepositorySpec,
    ScheduleSpec,
    SuiteFile,
    error_location,
)
from tracker.errors import SuiteError

DEFAULT_BACKFILL_LIMIT = 20


class ResolvedCase(BaseModel):
    """A case with the suite defaults applied: what the database stores as one case version."""

    model_config = ConfigDict(frozen=True)

    slug: str
    suite: str
    title: str
    model: str
    family: str
    task: str
    workload: str
    mode: str
    repository: str
    hardware: list[str]
    num_gpus: int
    threshold_pct: float
    thresholds: dict[str, float]
    # The cap on a suspect's paired rounds (each two runs), and its per-hardware overrides; None:
    # the confirmation policy's (tracker.detection.confirmation).
    confirmation_max_rounds: int | None = None
    confirmation_caps: dict[str, int] = Field(default_factory=dict)
    output_psnr_db: float | None = None  # PSNR (dB) at or above which an output is the same picture
    requests: int
    timeout_s: int
    params: dict[str, Any]
    flags: dict[str, FlagValue]
    paths: list[str] = Field(default_factory=list)

    def config_hash(self) -> str:
        """SHA-256 of what changes a measurement; title, thresholds (the output's tolerance and
        the confirmation cap too), hardware list and paths do not."""
        identity = {
            "model": self.model,
            "task": self.task,
            "workload": self.workload,
            "mode": self.mode,
            "num_gpus": self.num_gpus,
            "requests": self.requests,
            "params": self.params,
            "flags": self.flags,
        }
        canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


class ResolvedSchedule(BaseModel):
    """A schedule with its defaults applied (branch, hardware kinds, backfill limit)."""

    model_config = ConfigDict(frozen=True)

    name: str
    suite: str
    repository: str
    cron: str
    timezone: str
    branch: str
    hardware: list[str]
    backfill_limit: int = Field(description="0: no backfill")

    def trigger(self) -> CronTrigger:
        """The APScheduler trigger of this schedule."""
        return CronTrigger.from_crontab(self.cron, timezone=self.timezone)


class Suite(BaseModel):
    """A loaded, validated suite."""

    model_config = ConfigDict(frozen=True)

    path: str
    name: str
    description: str
    repository: RepositorySpec
    hardware: dict[str, HardwareSpec]
    cases: list[ResolvedCase]
    schedules: list[ResolvedSchedule] = Field(default_factory=list)


def parse_suite(text: str, path: str = "<suite>") -> Suite:
    """Validate a suite file's text; raise :class:`SuiteError` naming file, line and field."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+), column \d+\)", str(error))
        line = int(found.group(1)) if found else None
        raise SuiteError(path, line, None, f"not valid TOML: {error}") from None
    positions = index_lines(text)
    try:
        suite_file = SuiteFile.model_validate(raw)
    except ValidationError as error:
        problems = error.errors(include_url=False)
        first = problems[0]
        location = error_location(first)
        field = _dotted(location)
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "missing":
            message = "required field is missing"
        elif first["type"] == "extra_forbidden":
            message = "unknown field"
        more = len({error_location(problem) for problem in problems}) - 1
        if more:
            message += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise SuiteError(path, line_of(positions, location), field, message) from None
    return _resolve(suite_file, path)


def _dotted(location: tuple[str | int, ...]) -> str:
    """``("cases", 3, "params", "width")`` → ``cases[3].params.width``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _resolve(suite_file: SuiteFile, path: str) -> Suite:
    defaults = suite_file.defaults
    cases = [
        ResolvedCase(
            slug=case.slug,
            suite=suite_file.suite.name,
            title=case.title or case.slug,
            model=case.model,
            family=case.family,
            task=case.task,
            workload=case.workload or defaults.workload,
            mode=case.mode or defaults.mode,
            repository=suite_file.repository.name,
            hardware=list(case.hardware),
            num_gpus=case.num_gpus,
            threshold_pct=case.threshold_pct if case.threshold_pct is not None else defaults.threshold_pct,
            thresholds=dict(case.thresholds),
            confirmation_max_rounds=case.confirmation_max_rounds,
            confirmation_caps=dict(case.confirmation_caps),
            output_psnr_db=case.output_psnr_db
            if case.output_psnr_db is not None
            else defaults.output_psnr_db,
            requests=case.requests,
            timeout_s=case.timeout_s or defaults.timeout_s,
            params=case.params.model_dump(by_alias=True, exclude_none=True),
            flags=dict(case.flags),
            paths=[*case.paths, *(path for path in defaults.paths if path not in case.paths)],
        )
        for case in suite_file.cases
    ]
    return Suite(
        path=path,
        name=suite_file.suite.name,
        description=suite_file.suite.description,
        repository=suite_file.repository,
        hardware=dict(suite_file.hardware),
        cases=cases,
        schedules=[_resolve_schedule(spec, suite_file) for spec in suite_file.schedule],
    )


def _resolve_schedule(spec: ScheduleSpec, suite_file: SuiteFile) -> ResolvedSchedule:
    used = [name for name in suite_file.hardware if any(name in case.hardware for case in suite_file.cases)]
    if spec.backfill is True:
        limit = DEFAULT_BACKFILL_LIMIT
    else:
        limit = 0 if spec.backfill is False else int(spec.backfill)
    return ResolvedSchedule(
        name=spec.name,
        suite=suite_file.suite.name,
        repository=suite_file.repository.name,
        cron=spec.cron,
        timezone=spec.timezone,
        branch=spec.branch or suite_file.repository.default_branch,
        hardware=list(spec.hardware) if spec.hardware is not None else used,
        backfill_limit=limit,
    )


def load_suite(path: Path) -> Suite:
    """Read and validate one suite file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SuiteError(str(path), None, None, f"cannot read suite file: {error}") from None
    return parse_suite(text, str(path))


def load_suites(directory: Path) -> list[Suite]:
    """Every ``*.toml`` suite in a directory, sorted by file name; case slugs must be unique."""
    suites = [load_suite(path) for path in sorted(directory.glob("*.toml"))]
    owners: dict[str, str] = {}
    for suite in suites:
        for case in suite.cases:
            if case.slug in owners:
                raise SuiteError(
                    suite.path, None, "cases.slug", f"case {case.slug!r} also in {owners[case.slug]}"
                )
            owners[case.slug] = suite.path
    schedule_owners: dict[str, str] = {}
    for suite in suites:
        for schedule in suite.schedules:
            if schedule.name in schedule_owners:
                raise SuiteError(
                    suite.path,
                    None,
                    "schedule.name",
                    f"schedule {schedule.name!r} also in {schedule_owners[schedule.name]}",
                )
            schedule_owners[schedule.name] = suite.path
    return suites
