"""Nightly schedules and periodic tasks: one leader among processes runs an APScheduler scheduler.

May import: every package of the tracker (never bootstrap).

``nightly``: what one firing does (pure domain function over a session). ``periodic``: lease
expiry, detection sweep, GitHub outbox, calibrations. ``leader``: PostgreSQL advisory lock or a
file lock. ``service``: the scheduler itself. ``summary``: what the nightly page shows.
"""
