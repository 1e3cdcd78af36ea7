"""Storing results: limits, redaction, measurement conditions, each run written once.

May import: queue, series, vcs, catalog and everything below them.
"""
