"""Runs' seeded outputs: storing what a run generated, and checking one side's output against another's.

May import: vcs, catalog, observability, access, statistics, models, db, settings, errors and enums.
"""
