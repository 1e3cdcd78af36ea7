"""Who may act: API tokens, dashboard sessions, the sign-in throttle, and secrets kept out of stored text.

May import: statistics, models, db, settings, errors and enums.
"""
