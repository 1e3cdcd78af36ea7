"""The suite file's format: the tables and fields a suite TOML may hold, each validated on its own.

Patterns for slugs and hardware names, the ``[suite]``, ``[repository]``, ``[hardware.NAME]``,
``[defaults]``, ``[[cases]]`` and ``[[schedule]]`` tables, and the checks across them (every name
a case or schedule uses is declared), each naming the key it is about; :func:`error_location`
says where any problem lies. Applying the defaults and reporting problems with file and line is
:mod:`tracker.catalog.suites`.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Annotated, Any, Literal

from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SLUG_PATTERN = r"^[a-z0-9][a-z0-9.\-]{1,126}[a-z0-9]$"
HARDWARE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$"
FlagValue = bool | int | float | str
Percent = Annotated[float, Field(gt=0, le=100)]
# The output tolerance: PSNR at or above it is the same picture (tracker.statistics.fidelity).
PsnrDb = Annotated[float, Field(ge=10, le=100, description="dB")]
# A cap on a confirmation's paired rounds (each round two runs): from the 2 rounds a confirmation
# starts with to the 64 any comparison may grow to (tracker.comparisons.creation.MAX_ROUNDS). Strict:
# "32" or 32.5 is a mistake to name, not a number to guess.
MIN_CONFIRMATION_ROUNDS, MAX_CONFIRMATION_ROUNDS = 2, 64
ConfirmationRounds = Annotated[
    int,
    Field(strict=True, ge=MIN_CONFIRMATION_ROUNDS, le=MAX_CONFIRMATION_ROUNDS, description="paired rounds"),
]
# The member tags pydantic puts in the location of an error inside a union (flag values).
_UNION_TAGS = frozenset({"bool", "int", "float", "str"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuiteInfo(_Strict):
    """The ``[suite]`` table."""

    name: Annotated[str, Field(pattern=SLUG_PATTERN)]
    description: str = ""


class CarrySpec(_Strict):
    """One ``[[repository.carry]]`` entry: a patch every candidate carries until it is merged."""

    ref: Annotated[str, Field(pattern=r"^(?:[0-9a-f]{7,40}|refs/pull/\d+/head)$")]
    hardware: Annotated[str, Field(pattern=HARDWARE_PATTERN)] | None = None
    reason: str = ""


class RepositorySpec(_Strict):
    """The ``[repository]`` table: what the cases' commits belong to."""

    name: Annotated[str, Field(pattern=SLUG_PATTERN)]
    url: Annotated[str, Field(min_length=1)]
    default_branch: str = "main"
    carry: list[CarrySpec] = Field(default_factory=list)


class HardwareSpec(_Strict):
    """One ``[hardware.NAME]`` table."""

    description: str = ""


class Params(BaseModel):
    """Generation parameters, keyed by their ``sglang generate`` flag names."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    prompt: Annotated[str, Field(min_length=1)]
    negative_prompt: str | None = Field(default=None, alias="negative-prompt")
    width: Annotated[int, Field(gt=0, le=16384)] | None = None
    height: Annotated[int, Field(gt=0, le=16384)] | None = None
    num_frames: Annotated[int, Field(gt=0)] | None = Field(default=None, alias="num-frames")
    num_inference_steps: Annotated[int, Field(gt=0, le=1000)] = Field(alias="num-inference-steps")
    guidance_scale: Annotated[float, Field(ge=0)] | None = Field(default=None, alias="guidance-scale")
    seed: int

    @model_validator(mode="after")
    def _extra_values_are_scalars(self) -> Params:
        for key, value in (self.model_extra or {}).items():
            if not isinstance(value, bool | int | float | str):
                raise ValueError(f"parameter {key!r} must be a string, number or boolean")
        return self


class CaseSpec(_Strict):
    """One ``[[cases]]`` entry."""

    slug: Annotated[str, Field(pattern=SLUG_PATTERN)]
    title: str = ""
    model: Annotated[str, Field(min_length=1)]
    family: Annotated[str, Field(pattern=SLUG_PATTERN)]
    task: Literal["t2i", "i2i", "t2v", "i2v", "ti2v"]
    workload: Literal["sglang", "toy"] | None = None
    mode: Literal["generate", "serve"] | None = None
    hardware: Annotated[list[Annotated[str, Field(pattern=HARDWARE_PATTERN)]], Field(min_length=1)]
    num_gpus: Annotated[int, Field(ge=1, le=64)] = 1
    threshold_pct: Percent | None = None
    thresholds: dict[str, Percent] = Field(default_factory=dict, description="per-hardware overrides")
    confirmation_max_rounds: ConfirmationRounds | None = Field(
        default=None, description="cap on a suspect's paired rounds; None: the confirmation policy's"
    )
    confirmation_caps: dict[str, ConfirmationRounds] = Field(
        default_factory=dict, description="per-hardware overrides of confirmation_max_rounds"
    )
    output_psnr_db: PsnrDb | None = None
    requests: Annotated[int, Field(ge=1, le=100)] = 1
    timeout_s: Annotated[int, Field(ge=10, le=86_400)] | None = None
    params: Params
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    paths: list[Annotated[str, Field(min_length=1, max_length=255)]] = Field(
        default_factory=list,
        description="globs of repository files (e.g. python/sglang/multimodal_gen/**/qwen_image*.py); "
        "a PR touching one selects this case for a bare /perf",
    )

    @field_validator("paths")
    @classmethod
    def _relative_globs(cls, paths: list[str]) -> list[str]:
        for pattern in paths:
            if pattern.startswith("/") or ".." in pattern.split("/"):
                raise ValueError(f"path glob {pattern!r} must be relative to the repository root")
        return paths

    @field_validator("flags")
    @classmethod
    def _flag_names(cls, flags: dict[str, FlagValue]) -> dict[str, FlagValue]:
        for name in flags:
            if not re.fullmatch(r"[a-z0-9][a-z0-9\-.]*", name):
                raise ValueError(f"flag {name!r} must be written as sglang spells it, without '--'")
        return flags


class ScheduleSpec(_Strict):
    """One ``[[schedule]]`` entry: when to measure a branch's head on which hardware kinds.

    ``cron`` is a five-field crontab line (minute hour day month weekday) read in ``timezone``;
    ``branch`` defaults to the repository's default branch, ``hardware`` to every kind the cases
    run on; ``backfill`` also queues commits since the last nightly that were never measured
    (``true``: up to 20, a number: up to that many, first-parent line only).
    """

    name: Annotated[str, Field(pattern=SLUG_PATTERN)]
    cron: Annotated[str, Field(min_length=1)]
    timezone: str = "UTC"
    branch: Annotated[str, Field(pattern=r"^[A-Za-z0-9._/\-]{1,255}$")] | None = None
    hardware: list[Annotated[str, Field(pattern=HARDWARE_PATTERN)]] | None = None
    backfill: bool | int = False

    @field_validator("backfill")
    @classmethod
    def _backfill_limit(cls, value: bool | int) -> bool | int:
        if not isinstance(value, bool) and not 0 <= value <= 1000:
            raise ValueError(
                f"backfill must be true, false or a number of commits from 0 to 1000, not {value}"
            )
        return value

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown timezone {value!r} (an IANA name such as 'UTC' or 'Asia/Shanghai')"
            ) from None
        return value

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(f"cron {value!r} must have five fields: minute hour day month weekday")
        try:
            CronTrigger.from_crontab(value, timezone="UTC")
        except ValueError as error:
            raise ValueError(f"invalid cron {value!r}: {error}") from None
        return value


class Defaults(_Strict):
    """The ``[defaults]`` table, applied to every case that does not say otherwise."""

    threshold_pct: Percent = 2.0
    output_psnr_db: PsnrDb | None = Field(default=None, description="None: the tracker's default, 40 dB")
    workload: Literal["sglang", "toy"] = "sglang"
    mode: Literal["generate", "serve"] = "generate"
    timeout_s: Annotated[int, Field(ge=10, le=86_400)] = 3600
    paths: list[Annotated[str, Field(min_length=1, max_length=255)]] = Field(
        default_factory=list,
        description="globs of shared code whose change selects every case (added to each case's own)",
    )


class SuiteFile(_Strict):
    """A whole suite file."""

    suite: SuiteInfo
    repository: RepositorySpec
    hardware: dict[Annotated[str, Field(pattern=HARDWARE_PATTERN)], HardwareSpec]
    defaults: Defaults = Defaults()
    cases: Annotated[list[CaseSpec], Field(min_length=1)]
    schedule: list[ScheduleSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references_resolve(self) -> SuiteFile:
        for index, carried in enumerate(self.repository.carry):
            if carried.hardware is not None and carried.hardware not in self.hardware:
                known = ", ".join(sorted(self.hardware))
                raise _LocatedError(
                    ("repository", "carry", index, "hardware"),
                    f"unknown hardware kind {carried.hardware!r} (known: {known})",
                )
        seen: set[str] = set()
        for index, case in enumerate(self.cases):
            if case.slug in seen:
                raise _LocatedError(("cases", index, "slug"), f"duplicate case slug {case.slug!r}")
            seen.add(case.slug)
            for name in case.hardware:
                if name not in self.hardware:
                    known = ", ".join(sorted(self.hardware))
                    raise _LocatedError(
                        ("cases", index, "hardware"), f"unknown hardware kind {name!r} (known: {known})"
                    )
            overrides = (
                ("thresholds", "threshold", case.thresholds.keys()),
                ("confirmation_caps", "confirmation cap", case.confirmation_caps.keys()),
            )
            for key, what, names in overrides:
                for name in names:
                    if name not in case.hardware:
                        raise _LocatedError(
                            ("cases", index, key, name),
                            f"{what} for {name!r}, which is not in this case's hardware list",
                        )
        self._schedules_resolve()
        return self

    def _schedules_resolve(self) -> None:
        used = {name for case in self.cases for name in case.hardware}
        names: set[str] = set()
        for index, schedule in enumerate(self.schedule):
            if schedule.name in names:
                raise _LocatedError(("schedule", index, "name"), f"duplicate schedule name {schedule.name!r}")
            names.add(schedule.name)
            for name in schedule.hardware or []:
                if name not in used:
                    known = ", ".join(sorted(used))
                    raise _LocatedError(
                        ("schedule", index, "hardware"),
                        f"unknown hardware kind {name!r}: no case runs on it (cases run on: {known})",
                    )


class _LocatedError(ValueError):
    """A cross-field error that knows which key it is about."""

    def __init__(self, location: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.location = location


def error_location(error: Any) -> tuple[str | int, ...]:
    """Where one of pydantic's errors about a suite file lies, as keys and indexes from the top."""
    context = error.get("ctx", {}).get("error")
    if isinstance(context, _LocatedError):
        return context.location
    # Drop pydantic's markers: "function-after[...]" and the member tags of a union (flag values).
    location = tuple(part for part in error["loc"] if not (isinstance(part, str) and "[" in part))
    if len(location) > 1 and location[-1] in _UNION_TAGS:
        location = location[:-1]
    return location
