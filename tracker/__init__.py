"""perftrack's domain core: settings, ORM models, queries, ingest, tokens and suites.

Imports no web framework and nothing from ``runners``; ``web`` and the CLI call into it.
"""
