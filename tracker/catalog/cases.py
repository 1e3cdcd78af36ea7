"""Keep the database's cases, hardware kinds and repositories in step with the suite files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from tracker.catalog.suites import ResolvedCase, Suite
from tracker.enums import RunMode, Workload
from tracker.errors import InvalidInput
from tracker.models import CarriedPatch, Case, CaseHardware, HardwareKind, Repository


@dataclass
class SyncReport:
    """What a suite sync changed."""

    created: list[str] = field(default_factory=list)
    new_versions: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def sync_suites(*, session: Session, suites: list[Suite]) -> SyncReport:
    """Store every case of the suites; a changed configuration becomes a new case version."""
    report = SyncReport()
    for suite in suites:
        repository = ensure_repository(
            session=session,
            name=suite.repository.name,
            url=suite.repository.url,
            default_branch=suite.repository.default_branch,
        )
        kinds = {
            name: ensure_hardware_kind(session=session, name=name, description=spec.description)
            for name, spec in suite.hardware.items()
        }
        _sync_carried(session=session, repository=repository, suite=suite, kinds=kinds)
        for spec in suite.cases:
            _sync_case(session=session, spec=spec, repository=repository, kinds=kinds, report=report)
    session.flush()
    return report


def ensure_repository(*, session: Session, name: str, url: str, default_branch: str = "main") -> Repository:
    """The repository of that name, created or brought up to date."""
    repository = session.scalar(select(Repository).where(Repository.name == name))
    if repository is None:
        repository = Repository(name=name, url=url, default_branch=default_branch)
        session.add(repository)
        session.flush()
    else:
        repository.url = url
        repository.default_branch = default_branch
    return repository


def ensure_hardware_kind(*, session: Session, name: str, description: str = "") -> HardwareKind:
    """The hardware kind of that name, created if new."""
    kind = session.scalar(select(HardwareKind).where(HardwareKind.name == name))
    if kind is None:
        kind = HardwareKind(name=name, description=description)
        session.add(kind)
        session.flush()
    elif description:
        kind.description = description
    return kind


def _sync_case(
    *,
    session: Session,
    spec: ResolvedCase,
    repository: Repository,
    kinds: dict[str, HardwareKind],
    report: SyncReport,
) -> None:
    """Store one case: a new version when what it measures changed, else its current one brought up to date."""
    config_hash = spec.config_hash()
    versions = session.scalars(select(Case).where(Case.slug == spec.slug)).all()
    case = next((version for version in versions if version.config_hash == config_hash), None)
    if case is None:
        case = _new_version(spec=spec, config_hash=config_hash, versions=versions)
        session.add(case)
        (report.new_versions if versions else report.created).append(spec.slug)
    elif _unchanged(case=case, spec=spec, repository=repository):
        report.unchanged.append(spec.slug)
        return
    else:
        report.updated.append(spec.slug)
    for version in versions:
        version.is_current = version is case
    case.is_current = True
    case.title = spec.title
    case.model_family = spec.family
    case.repository = repository
    case.threshold_pct = spec.threshold_pct
    case.confirmation_max_rounds = spec.confirmation_max_rounds
    case.output_psnr_db = spec.output_psnr_db
    case.timeout_s = spec.timeout_s
    case.paths = list(spec.paths)
    _reconcile_hardware(case=case, spec=spec, kinds=kinds)
    session.flush()


def _new_version(*, spec: ResolvedCase, config_hash: str, versions: Sequence[Case]) -> Case:
    """The next version of a case whose measured configuration is new (the first when ``versions`` is empty)."""
    return Case(
        slug=spec.slug,
        version=max((version.version for version in versions), default=0) + 1,
        config_hash=config_hash,
        suite=spec.suite,
        model=spec.model,
        task=spec.task,
        workload=Workload(spec.workload),
        mode=RunMode(spec.mode),
        num_gpus=spec.num_gpus,
        requests=spec.requests,
        params=spec.params,
        flags=spec.flags,
        paths=spec.paths,
    )


def _unchanged(*, case: Case, spec: ResolvedCase, repository: Repository) -> bool:
    """Whether the current version already says everything the suite does."""
    return (
        case.is_current
        and case.title == spec.title
        and case.threshold_pct == spec.threshold_pct
        and case.confirmation_max_rounds == spec.confirmation_max_rounds
        and case.output_psnr_db == spec.output_psnr_db
        and case.model_family == spec.family
        and case.timeout_s == spec.timeout_s
        and list(case.paths) == spec.paths
        and case.repository_id == repository.id
        and _hardware_of(case) == {name: _overrides(spec, name) for name in spec.hardware}
    )


def _reconcile_hardware(*, case: Case, spec: ResolvedCase, kinds: dict[str, HardwareKind]) -> None:
    """Make the case's hardware kinds and their overrides (threshold, confirmation cap) the suite's."""
    # Reconcile in place: replacing the list would insert new rows before deleting old ones.
    existing = {entry.hardware_kind.name: entry for entry in case.hardware}
    for name, entry in existing.items():
        if name not in spec.hardware:
            case.hardware.remove(entry)
    for name in spec.hardware:
        threshold_pct, confirmation_max_rounds = _overrides(spec, name)
        if name in existing:
            existing[name].threshold_pct = threshold_pct
            existing[name].confirmation_max_rounds = confirmation_max_rounds
        else:
            case.hardware.append(
                CaseHardware(
                    hardware_kind=kinds[name],
                    threshold_pct=threshold_pct,
                    confirmation_max_rounds=confirmation_max_rounds,
                )
            )


def _sync_carried(
    *, session: Session, repository: Repository, suite: Suite, kinds: dict[str, HardwareKind]
) -> None:
    """Make the repository's carried patches exactly the ones the suite lists, in its order."""
    wanted = {
        (carry.ref, kinds[carry.hardware].id if carry.hardware else None): (position, carry.reason)
        for position, carry in enumerate(suite.repository.carry)
    }
    stored = session.scalars(select(CarriedPatch).where(CarriedPatch.repository_id == repository.id)).all()
    for patch in stored:
        key = (patch.ref, patch.hardware_kind_id)
        if key in wanted:
            patch.position, patch.reason = wanted.pop(key)
        else:
            session.delete(patch)
    for (ref, kind_id), (position, reason) in wanted.items():
        session.add(
            CarriedPatch(
                repository_id=repository.id,
                ref=ref,
                hardware_kind_id=kind_id,
                position=position,
                reason=reason,
            )
        )
    session.flush()


# Built once: every claim asks it (bound per call, its cache key computed once).
_CARRIED = (
    select(CarriedPatch)
    .where(
        CarriedPatch.repository_id == bindparam("p_repository"),
        (CarriedPatch.hardware_kind_id == bindparam("p_kind")) | CarriedPatch.hardware_kind_id.is_(None),
    )
    .order_by(CarriedPatch.position, CarriedPatch.id)
)


def carried_patches_for(*, session: Session, repository_id: int, hardware_kind_id: int) -> list[CarriedPatch]:
    """Patches a candidate of this repository on this hardware kind must carry, in order."""
    return list(session.scalars(_CARRIED, {"p_repository": repository_id, "p_kind": hardware_kind_id}))


def _hardware_of(case: Case) -> dict[str, tuple[float | None, int | None]]:
    """Each of the case's hardware kinds with its stored overrides (threshold, confirmation cap)."""
    return {
        entry.hardware_kind.name: (entry.threshold_pct, entry.confirmation_max_rounds)
        for entry in case.hardware
    }


def _overrides(spec: ResolvedCase, name: str) -> tuple[float | None, int | None]:
    """What the suite overrides on one hardware kind of a case: its threshold and confirmation cap."""
    return spec.thresholds.get(name), spec.confirmation_caps.get(name)


def get_current_case(*, session: Session, slug: str, field: str = "case") -> Case:
    """The current version of a case, or :class:`InvalidInput` listing the known slugs."""
    case = session.scalar(select(Case).where(Case.slug == slug, Case.is_current.is_(True)))
    if case is None:
        known = session.scalars(select(Case.slug).where(Case.is_current.is_(True)).order_by(Case.slug)).all()
        listing = ", ".join(known) if known else "none: load a suite first (perftrack suites sync)"
        raise InvalidInput(field, f"unknown case {slug!r}; known cases: {listing}")
    return case


def get_hardware_kind(*, session: Session, name: str, field: str = "hardware") -> HardwareKind:
    """The hardware kind of that name, or :class:`InvalidInput` listing the known ones."""
    kind = session.scalar(select(HardwareKind).where(func.lower(HardwareKind.name) == name.lower()))
    if kind is None:
        known = session.scalars(select(HardwareKind.name).order_by(HardwareKind.name)).all()
        raise InvalidInput(field, f"unknown hardware kind {name!r}; known: {', '.join(known) or 'none'}")
    return kind


def list_current_cases(*, session: Session) -> list[Case]:
    """Every current case version, by suite and slug."""
    return list(
        session.scalars(select(Case).where(Case.is_current.is_(True)).order_by(Case.suite, Case.slug)).all()
    )


def list_hardware_kinds(*, session: Session) -> list[HardwareKind]:
    """Every hardware kind, by name."""
    return list(session.scalars(select(HardwareKind).order_by(HardwareKind.name)))
