"""``perftrack scheduler``: run the nightly schedules and periodic sweeps as their own process."""

from __future__ import annotations

import threading

import typer

from perftrack.cli.common import console, fail, settings
from tracker import db
from tracker.bootstrap import prepare_database
from tracker.errors import PerftrackError
from tracker.observability.log_config import configure_from_settings
from tracker.scheduling.service import SchedulerService


def scheduler(
    once: bool = typer.Option(
        False, "--once", help="Fire every schedule and run each sweep once now, then exit (needs leadership)."
    ),
) -> None:
    """Run the scheduler; with several processes (servers or schedulers) exactly one leads."""
    config = settings()
    configure_from_settings(config)
    engine = db.make_engine(config.effective_database_url)
    try:
        prepare_database(config, engine)
        service = SchedulerService.from_settings(config, engine)
        if once:
            _once(service)
            return
        console.print(
            f"scheduler: {len(service.schedules)} schedule(s) ({', '.join(service.schedules) or 'none'}); "
            "waiting for leadership, Ctrl-C to stop"
        )
        service.start()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            console.print("scheduler: stopping")
        finally:
            service.stop()
    except PerftrackError as error:
        fail(str(error))
    finally:
        engine.dispose()


def _once(service: SchedulerService) -> None:
    if not service.leader.acquire():
        fail("another scheduler leads; --once runs only in the leading process", code=3)
    try:
        for run in service.run_once():
            if run.error:
                console.print(f"{run.schedule}: [red]error[/] {run.error}", highlight=False)
            else:
                console.print(
                    f"{run.schedule}: {run.branch} at {run.commit_sha}: {run.jobs_queued} job(s) queued, "
                    f"{run.jobs_existing} already there, {len(run.backfilled)} backfilled",
                    highlight=False,
                )
    finally:
        service.leader.release()
