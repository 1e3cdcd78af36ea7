"""Jobs, leases, runners and attempts; it reports the jobs that ended and never reacts to them.

May import: vcs, catalog, observability, access, statistics, models, db, settings, errors and enums.
"""
