"""The FastAPI application factory."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from fastapi import FastAPI, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from tracker import db
from tracker.bootstrap import prepare_database
from tracker.models import utcnow
from tracker.queue.wakeups import NotifyListener
from tracker.scheduling.housekeeping import Housekeeper
from tracker.scheduling.service import SchedulerService
from tracker.settings import Settings, get_settings
from tracker.vcs.history import GitHistory
from web.api.main import api_router
from web.auth import WebSessionMiddleware
from web.errors import install_error_handlers
from web.headers import SecurityHeaders
from web.limits import BodySizeLimit
from web.metrics import router as metrics_router
from web.observe import RequestObserver
from web.pages.main import pages_router
from web.redirects import RelativeRedirects
from web.schemas import Health
from web.state import AppState
from web.vendor import router as vendor_router

logger = logging.getLogger("perftrack.web")
STATIC_DIR = Path(__file__).resolve().parent / "static"


def perftrack_version() -> str:
    """The installed package version."""
    try:
        return version("perftrack")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0+unknown"


def create_app(
    settings: Settings | None = None,
    engine: Engine | None = None,
    *,
    sessions: sessionmaker[Session] | None = None,
    prepare: bool = True,
    clock: Callable[[], dt.datetime] = utcnow,
) -> FastAPI:
    """Build the app; ``prepare`` migrates (SQLite) and syncs suites at start-up.

    ``sessions`` lets tests run every request inside one rolled-back transaction; ``clock`` lets
    them move time (dashboard session expiry, the sign-in throttle).
    """
    settings = settings or get_settings()
    engine = engine or db.make_engine(settings.effective_database_url)
    state = AppState(
        settings=settings,
        engine=engine,
        sessions=sessions or db.make_session_factory(engine),
        read_sessions=sessions or db.make_session_factory(engine, write=False),
        clock=clock,
    )
    # FastAPIOffline serves Swagger UI and ReDoc from the installed package: /docs works air-gapped.
    app = FastAPIOffline(
        title="perftrack",
        summary="Performance tracking for diffusion-model pull requests",
        version=perftrack_version(),
        # An app on borrowed sessions (tests: one rolled-back transaction) does no housekeeping of its
        # own: the housekeeper's connection would not see that transaction's work.
        lifespan=_lifespan(
            settings, engine, state, prepare=prepare, housekeeping=settings.housekeeping and sessions is None
        ),
    )
    app.state.perftrack = state
    install_error_handlers(app)
    _add_middleware(app, settings)
    _add_routes(app)
    _add_health_check(app, state)
    return app


def _lifespan(
    settings: Settings, engine: Engine, state: AppState, *, prepare: bool, housekeeping: bool
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Start-up and shutdown: prepare the database (if ``prepare``), run the scheduler (if enabled),
    and on PostgreSQL listen for queued jobs, which wake waiting claims."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if prepare:
            prepare_database(settings, engine)
        state.waiters.start(NotifyListener(engine.url) if engine.dialect.name == "postgresql" else None)
        scheduler = SchedulerService.from_settings(settings, engine) if settings.scheduler_enabled else None
        housekeeper = None
        if scheduler is not None:
            scheduler.start()  # elects a leader among all processes; only the leader schedules
        elif housekeeping:  # claims expire no lease, batches evaluate no series: without a scheduler, we do
            housekeeper = Housekeeper(
                engine,
                history=GitHistory(settings.git_cache_dir),
                telling=settings.culprit_telling(),
            )
            housekeeper.start()
        try:
            yield
        finally:
            state.waiters.close()
            if scheduler is not None:
                scheduler.stop()
            if housekeeper is not None:
                housekeeper.stop()

    return lifespan


def _add_middleware(app: FastAPI, settings: Settings) -> None:
    """The body size limit, dashboard sessions, security headers, relative redirects and request
    logging, innermost first."""
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    assert settings.session_secret is not None  # Settings fills it in (random) outside production
    app.add_middleware(
        WebSessionMiddleware,
        secret=settings.session_secret.get_secret_value(),
        max_age_s=settings.session_max_age_s,
    )
    app.add_middleware(SecurityHeaders)  # on every answer, refusals by inner middleware included
    app.add_middleware(RelativeRedirects)  # no Location built from the Host header (trailing slashes)
    app.add_middleware(RequestObserver)  # added last: outermost, so it times and logs every answer


def _add_routes(app: FastAPI) -> None:
    """The API, the pages, vendored assets, metrics and static files."""
    app.include_router(api_router)
    app.include_router(pages_router)
    app.include_router(vendor_router)
    app.include_router(metrics_router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")


def _add_health_check(app: FastAPI, state: AppState) -> None:
    """``GET /healthz``: liveness and whether the database answers."""

    @app.get(
        "/healthz",
        response_model=Health,
        tags=["health"],
        responses={503: {"description": "Database unreachable"}},
    )
    def healthz(response: Response) -> Health:
        """Liveness and database reachability (503 when the database cannot be reached)."""
        try:
            with state.read_sessions() as session:
                session.execute(text("SELECT 1"))
                revision = db.current_revision_of(session.connection())
            database = "ok"
        except Exception:  # a health check reports, it does not raise
            logger.warning("health check: database unreachable", exc_info=True)
            revision, database = None, "unreachable"
            response.status_code = 503
        return Health(
            status="ok" if database == "ok" else "degraded",
            database=database,
            schema_revision=revision,
            version=perftrack_version(),
        )
