"""A/B comparisons of candidates in interleaved rounds, A/A calibration, and their summaries.

May import: queue, series, vcs, catalog and everything below them.
"""
