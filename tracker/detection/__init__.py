"""Change detection on series: alerts, their log, paired confirmation, bisection, triage.

May import: comparisons, ingest, queue, series, outputs, vcs, catalog, observability, access, statistics,
models, db, settings, errors and enums.
"""
