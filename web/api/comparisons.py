"""A/B comparisons (request, list, read, cancel) and A/A calibrations (request, list)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from tracker.comparisons.calibration import calibrations_of, list_calibrations
from tracker.comparisons.creation import (
    create_calibration,
    create_comparison,
    repository_of_cases,
    resolve_candidate,
)
from tracker.comparisons.output_checks import output_runs
from tracker.comparisons.progress import cancel_comparison
from tracker.comparisons.summary import comparison_view, list_comparisons
from tracker.diagnosis.loading import comparison_diagnoses
from tracker.enums import ComparisonState, enum_values
from tracker.errors import InvalidInput
from web.deps import AdminTokenDep, SessionDep, SettingsDep, WriteSessionDep
from web.schemas import CalibrationIn, CalibrationOut, ComparisonDetailOut, ComparisonIn, ComparisonOut
from web.schemas.errors import ADMIN, BODY, errors
from web.schemas.params import MAX_INT32, ComparisonId

comparisons = APIRouter(prefix="/comparisons", tags=["comparisons"])
calibrations = APIRouter(prefix="/calibrations", tags=["calibrations"])
Limit = Annotated[int, Query(ge=1)]
_NOT_FOUND = {404: "No such comparison"}


@comparisons.post(
    "",
    response_model=ComparisonDetailOut,
    status_code=status.HTTP_201_CREATED,
    responses=errors(ADMIN, BODY, 404, 409),
)
def request_comparison(
    body: ComparisonIn, session: WriteSessionDep, token: AdminTokenDep
) -> ComparisonDetailOut:
    """Compare head with base on the cases (each on its hardware kinds) in interleaved rounds, the
    arms' order alternating (A B, B A, ...)."""
    repository = repository_of_cases(session=session, cases=body.cases)
    base = resolve_candidate(
        session=session, repository=repository, sha=body.base.sha, patches=body.base.patches
    )
    head = resolve_candidate(
        session=session, repository=repository, sha=body.head.sha, patches=body.head.patches
    )
    comparison = create_comparison(
        session=session,
        base=base,
        head=head,
        cases=body.cases,
        hardware=body.hardware,
        rounds=body.rounds,
        max_rounds=body.max_rounds,
        requests_per_round=body.requests_per_round,
        requested_by=token.name,
        pr_number=body.pr_number,
        pr_url=body.pr_url,
        command=body.command,
    )
    session.commit()
    return ComparisonDetailOut.of(comparison_view(session=session, comparison_id=comparison.id))


@comparisons.get("", response_model=list[ComparisonOut], responses=errors(422))
def read_comparisons(
    session: SessionDep,
    settings: SettingsDep,
    state: str | None = None,
    pr_number: Annotated[int | None, Query(ge=1, le=MAX_INT32)] = None,
    limit: Limit = 100,
) -> list[ComparisonOut]:
    """Comparisons newest first, optionally in one state or for one pull request."""
    chosen = None
    if state is not None:
        if state not in enum_values(ComparisonState):
            valid = ", ".join(enum_values(ComparisonState))
            raise InvalidInput("state", f"unknown state {state!r}; valid: {valid}")
        chosen = ComparisonState(state)
    found = list_comparisons(
        session=session, state=chosen, pr_number=pr_number, limit=min(limit, settings.max_page_size)
    )
    ids = [comparison.id for comparison in found]
    outputs = output_runs(session=session, comparison_ids=ids)
    calibrations = calibrations_of(session=session, comparison_ids=ids)
    return [ComparisonOut.of(comparison, outputs, calibrations) for comparison in found]


@comparisons.get(
    "/{comparison_id}", response_model=ComparisonDetailOut, responses=errors(404, 422, notes=_NOT_FOUND)
)
def read_comparison(comparison_id: ComparisonId, session: SessionDep) -> ComparisonDetailOut:
    """One comparison: per case × hardware the verdict, change, interval, threshold, rounds (each
    with the arm that ran first), head's output against base's, an A/A calibration's order effect
    and, once there is a verdict, the diagnosis (why head differs from base)."""
    view = comparison_view(session=session, comparison_id=comparison_id)
    return ComparisonDetailOut.of(
        view,
        comparison_diagnoses(session=session, view=view),
        output_runs(session=session, comparison_ids=[comparison_id]),
    )


@comparisons.post(
    "/{comparison_id}/cancel",
    response_model=ComparisonDetailOut,
    responses=errors(ADMIN, 404, 409, 422, notes={**_NOT_FOUND, 409: "Already finished"}),
)
def cancel(
    comparison_id: ComparisonId, session: WriteSessionDep, token: AdminTokenDep
) -> ComparisonDetailOut:
    """Cancel the comparison's queued and running jobs."""
    cancel_comparison(session=session, comparison_id=comparison_id, reason=f"cancelled by {token.name}")
    session.commit()
    view = comparison_view(session=session, comparison_id=comparison_id)
    return ComparisonDetailOut.of(view, outputs=output_runs(session=session, comparison_ids=[comparison_id]))


@calibrations.post(
    "",
    response_model=ComparisonDetailOut,
    status_code=status.HTTP_201_CREATED,
    responses=errors(ADMIN, BODY, 404, 409),
)
def request_calibration(
    body: CalibrationIn, session: WriteSessionDep, token: AdminTokenDep
) -> ComparisonDetailOut:
    """Run the candidate against itself (A/A); when done, a calibration is stored per case × hardware."""
    repository = repository_of_cases(session=session, cases=body.cases)
    candidate = resolve_candidate(
        session=session, repository=repository, sha=body.candidate.sha, patches=body.candidate.patches
    )
    comparison = create_calibration(
        session=session,
        candidate=candidate,
        cases=body.cases,
        hardware=body.hardware,
        rounds=body.rounds,
        requests_per_round=body.requests_per_round,
        requested_by=token.name,
    )
    session.commit()
    return ComparisonDetailOut.of(comparison_view(session=session, comparison_id=comparison.id))


@calibrations.get("", response_model=list[CalibrationOut], responses=errors(422))
def read_calibrations(
    session: SessionDep,
    settings: SettingsDep,
    case: str | None = None,
    hardware: str | None = None,
    limit: Limit = 100,
) -> list[CalibrationOut]:
    """Calibrations newest first, optionally of one case and hardware kind."""
    found = list_calibrations(
        session=session, case=case, hardware=hardware, limit=min(limit, settings.max_page_size)
    )
    return [CalibrationOut.of(calibration) for calibration in found]


router = APIRouter()
router.include_router(comparisons)
router.include_router(calibrations)
