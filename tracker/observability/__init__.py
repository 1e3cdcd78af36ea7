"""The service's own logging set-up and Prometheus metrics.

May import: access, statistics, models, db, settings, errors and enums.
"""
