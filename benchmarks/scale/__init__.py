"""The scale benchmark: a year of nightly history at real shape, measured on SQLite and PostgreSQL.

``python -m benchmarks.scale --help``; figures and findings in ``docs/scale.md``.
"""
