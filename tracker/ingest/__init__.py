"""Storing results: limits, redaction, measurement conditions, each run written once.

May import: queue, series, outputs, notifications, vcs, catalog, observability, access, statistics,
models, db, settings, errors and enums.
"""
