"""Read models for the pages and the API: nothing here writes.

May import: detection, diagnosis, comparisons, ingest, queue, series, outputs, notifications, vcs,
catalog, observability, access, statistics, models, db, settings, errors and enums.
"""
