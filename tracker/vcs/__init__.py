"""Commits, candidates (a base plus stacked patches), branch heads and git history.

May import: observability, access, statistics, models, db, settings, errors and enums.
"""
