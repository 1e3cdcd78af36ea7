"""Numbers only: step summaries, noise, change points, A/B rounds and the decisions on them (numpy and scipy; never SQLAlchemy, the models or the database).

May import: settings, errors and enums.
"""
