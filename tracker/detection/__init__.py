"""Change detection on series: alerts, their log, paired confirmation, bisection, triage.

May import: comparisons, ingest and everything below them.
"""
