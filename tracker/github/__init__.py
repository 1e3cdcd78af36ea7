"""The PR comment bot: ``/perf`` commands in pull-request comments become comparisons.

Modules: :mod:`commands` (the pure command parser), :mod:`webhook` (signature check),
:mod:`client` (the GitHub REST client), :mod:`bot` (what a command does), :mod:`render` (the
comment's Markdown) and :mod:`outbox` (every GitHub write, queued in the database and sent after
commit with backoff).
"""
