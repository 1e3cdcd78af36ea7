"""A case's measurements on one hardware kind: its runs, counts, state (noise, segments) and pending evaluations.

May import: vcs, catalog, observability, access, statistics, models, db, settings, errors and enums.
"""
