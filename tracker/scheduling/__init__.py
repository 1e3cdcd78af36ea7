"""Nightly schedules and periodic tasks: one leader among processes runs an APScheduler scheduler.

May import: workflows, github, views, detection, diagnosis, comparisons, ingest, queue, series, outputs,
notifications, vcs, catalog, observability, access, statistics, models, db, settings, errors and enums.

``nightly``: what one firing does (pure domain function over a session). ``periodic``: lease
expiry, detection sweep, GitHub outbox, calibrations. ``leader``: PostgreSQL advisory lock or a
file lock. ``service``: the scheduler itself. ``summary``: what the nightly page shows.
``nightly_notices``: each finished nightly's summary as a notification, and the task that sends
the notification outbox.
"""
