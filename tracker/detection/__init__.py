"""Change detection on series: alerts, their log, paired confirmation, bisection, triage, alert groups.

May import: comparisons, ingest, queue, series, outputs, notifications, vcs, catalog, observability,
access, statistics, models, db, settings, errors and enums.
"""
