"""A/B comparisons of candidates in interleaved rounds, A/A calibration, output checks and their summaries.

May import: queue, series, outputs, notifications, vcs, catalog, observability, access, statistics,
models, db, settings, errors and enums.
"""
