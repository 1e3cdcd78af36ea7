"""Runners and their identity: registration binds a runner token to one runner, which it alone acts as.

A runner advertises its hardware kind, GPUs, labels and version when it registers (a registration
is a heartbeat too). A runner token is one runner's identity: :func:`register_runner` binds it,
:func:`acting_runner` resolves it on every later call, and an admin token never acts as a runner.
:func:`list_runners` is the registry: online or not, and the job each one holds.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.access.tokens import authenticate_with_runner
from tracker.enums import JobState, TokenRole
from tracker.errors import Conflict, Forbidden, NotFound
from tracker.models import ApiToken, HardwareKind, Job, Runner, utcnow

logger = logging.getLogger(__name__)


def register_runner(
    *,
    session: Session,
    name: str,
    hardware: HardwareKind,
    gpu_count: int,
    labels: dict[str, Any],
    version: str,
    host: str,
    token: ApiToken | None,
    now: dt.datetime | None = None,
) -> Runner:
    """Create or update a runner's advertised capabilities; a registration is a heartbeat.

    A runner token is one runner's identity, bound to it here:

    - a new name is created and bound to ``token``;
    - a name bound to ``token`` is updated (the same agent restarting);
    - a name bound to another token is refused (:class:`Forbidden`) and nothing changes;
    - a token already bound to another name is refused (:class:`Conflict`): one token per runner;
    - a name bound to no token (a runner registered before tokens were bound, one of several that
      shared a token before migration 0011, or one whose token was revoked) is bound to the first
      runner token that registers it, logged as a warning; an operator who wants a different agent
      to take the name revokes the old token first.

    An admin token never acts as a runner (:class:`Forbidden`). ``token=None`` is for the tracker's
    own callers (tests, fixtures): it registers without touching the binding.
    """
    if token is not None:
        _check_runner_role(token)
    runner = session.scalar(select(Runner).where(Runner.name == name))
    if token is not None:
        _check_binding(session=session, name=name, runner=runner, token=token)
    if runner is None:
        runner = Runner(name=name, hardware_kind=hardware)
        session.add(runner)
    runner.hardware_kind = hardware
    runner.gpu_count = gpu_count
    runner.labels = dict(labels)
    runner.version = version
    runner.host = host
    if token is not None:
        runner.token_id = token.id
    runner.last_heartbeat_at = now or utcnow()
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError as error:
        # A concurrent registration took the name or bound the token between our reads and here.
        raise Conflict(f"runner {name!r} was registered concurrently; try again") from error
    return runner


def _check_binding(*, session: Session, name: str, runner: Runner | None, token: ApiToken) -> None:
    """Refuse a registration under a name bound to another token, or by a token bound to another name."""
    if runner is not None and runner.token_id is not None and runner.token_id != token.id:
        raise Forbidden(
            f"runner {name!r} is bound to another token; a token acts only as its own runner "
            "(register under another name, or rotate that runner's token)"
        )
    bound = session.scalar(select(Runner).where(Runner.token_id == token.id))
    if bound is not None and bound.name != name:
        raise Conflict(
            f"token {token.name!r} already acts as runner {bound.name!r}; each runner needs its own "
            "token (perftrack token create NAME --role runner)"
        )
    if runner is not None and runner.token_id is None:
        logger.warning("runner %r had no token; bound to token %r by its registration", name, token.name)


def acting_runner(*, session: Session, token: ApiToken, name: str | None = None) -> Runner:
    """The runner ``token`` is bound to; ``name``, when given, must be that runner's name.

    Identity comes from the token: naming another runner (or acting as one with an admin token) is
    :class:`Forbidden`; a token bound to no runner yet must register first (:class:`NotFound`).
    """
    _check_runner_role(token)
    return _acting(session, token, session.scalar(select(Runner).where(Runner.token_id == token.id)), name)


def claiming_runner(*, session: Session, secret: str | None, name: str) -> Runner:
    """The runner named ``name`` that the runner token ``secret`` is bound to, read with the token
    in one query (a claim's authentication and identity in its own transaction); errors as
    :func:`tracker.access.tokens.authenticate` and :func:`acting_runner` raise them."""
    token, runner = authenticate_with_runner(session=session, secret=secret)
    _check_runner_role(token)
    return _acting(session, token, runner, name)


def _acting(session: Session, token: ApiToken, runner: Runner | None, name: str | None) -> Runner:
    if name is not None and (runner is None or runner.name != name):
        if runner is None and session.scalar(select(Runner.id).where(Runner.name == name)) is None:
            raise NotFound(f"no runner named {name!r}; register it first")
        acting = f"runner {runner.name!r}" if runner is not None else "no runner yet"
        raise Forbidden(f"this token acts as {acting}, not as {name!r}; a token acts only as its own runner")
    if runner is None:
        raise NotFound(
            f"token {token.name!r} is bound to no runner; register it first (POST /api/v1/runners)"
        )
    return runner


def check_may_import(*, session: Session, token: ApiToken) -> None:
    """Refuse an import (a result outside any job) by a token bound to a runner.

    A GPU runner's token lives where pull-request code runs; bound to its runner it uploads only the
    results of the jobs that runner leased. Imports (logs from a laptop, CI) take a token of their
    own, so a token taken from a GPU host cannot write a result into any series it likes.
    """
    bound = session.scalar(select(Runner.name).where(Runner.token_id == token.id))
    if bound is not None:
        raise Forbidden(
            f"token {token.name!r} is runner {bound!r}'s: it uploads only the results of that runner's "
            "jobs; an import needs a token of its own (perftrack token create NAME --role runner)"
        )


def _check_runner_role(token: ApiToken) -> None:
    if token.role is not TokenRole.RUNNER:
        raise Forbidden("an admin token does not act as a runner; use the runner's own runner token")


@dataclass(frozen=True)
class RunnerStatus:
    """A runner with what is derived about it: online or not, the job it holds."""

    runner: Runner
    online: bool
    current_job_id: int | None


def list_runners(
    *, session: Session, offline_after: dt.timedelta, now: dt.datetime | None = None, name: str | None = None
) -> list[RunnerStatus]:
    """Registered runners (or the one named), online first; the current job is the one it holds."""
    now = now or utcnow()
    query = select(Runner).order_by(Runner.name)
    if name is not None:
        query = query.where(Runner.name == name)
    runners = session.scalars(query).all()
    leases = session.execute(
        select(Job.leased_by_runner_id, Job.id).where(
            Job.state == JobState.LEASED, Job.leased_by_runner_id.is_not(None)
        )
    ).all()
    holding = {int(runner_id): int(job_id) for runner_id, job_id in leases if runner_id is not None}
    statuses = [
        RunnerStatus(
            runner=runner,
            online=runner.last_heartbeat_at is not None and now - runner.last_heartbeat_at <= offline_after,
            current_job_id=holding.get(runner.id),
        )
        for runner in runners
    ]
    statuses.sort(key=lambda status: (not status.online, status.runner.name))
    return statuses
