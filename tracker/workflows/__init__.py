"""What follows what: a job that ended, a stored run or a finished round, chained to detection, bisection and the bot.

May import: github, views, detection, diagnosis, comparisons, ingest, queue, series, outputs,
notifications, vcs, catalog, observability, access, statistics, models, db, settings, errors and enums.
"""
