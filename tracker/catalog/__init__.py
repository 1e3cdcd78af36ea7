"""What is measured: suite files, the cases and hardware kinds they declare, path globs.

May import: observability, access, statistics, models, db, settings, errors and enums.
"""
