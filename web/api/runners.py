"""Runners: register and the registry (a runner's claim is :mod:`web.api.claims`)."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter

from tracker.catalog.cases import get_hardware_kind
from tracker.queue.runners import list_runners, register_runner
from web.deps import RunnerTokenDep, SessionDep, SettingsDep, WriteSessionDep
from web.schemas.errors import BODY, RUNNER, errors
from web.schemas.runner_protocol import runner_out
from wire import RunnerIn, RunnerOut

router = APIRouter(prefix="/runners", tags=["runners"])


@router.post(
    "",
    response_model=RunnerOut,
    responses=errors(
        RUNNER,
        BODY,
        403,
        409,
        notes={
            403: "An admin token, or the name is bound to another runner token; nothing changed",
            409: "This token already acts as another runner (one token per runner)",
        },
    ),
)
def register(
    body: RunnerIn, session: WriteSessionDep, settings: SettingsDep, token: RunnerTokenDep
) -> RunnerOut:
    """Register a runner (or update what it advertises): hardware kind, GPU count, labels, version.

    The first registration binds the runner token to the name; only that token acts as it after.
    """
    kind = get_hardware_kind(session=session, name=body.hardware)
    runner = register_runner(
        session=session,
        name=body.name,
        hardware=kind,
        gpu_count=body.gpu_count,
        labels=body.labels,
        version=body.version,
        host=body.host,
        token=token,
    )
    session.commit()
    offline_after = dt.timedelta(seconds=settings.runner_offline_after_s)
    status_ = next(
        s for s in list_runners(session=session, offline_after=offline_after) if s.runner.id == runner.id
    )
    return runner_out(status_)


@router.get("", response_model=list[RunnerOut])
def list_all(session: SessionDep, settings: SettingsDep) -> list[RunnerOut]:
    """The runner registry: online first, with the job each one holds."""
    offline_after = dt.timedelta(seconds=settings.runner_offline_after_s)
    return [runner_out(status_) for status_ in list_runners(session=session, offline_after=offline_after)]
