"""Outgoing webhooks: who is told what, and the outbox that tells them.

May import: vcs, catalog, observability, access, statistics, models, db, settings, errors and enums.

Modules: :mod:`subscriptions` (the receivers: URL, format, secret, events and filters),
:mod:`events` (an event queued to every subscription it concerns, in the caller's transaction),
:mod:`bodies` (the Slack-compatible and the signed generic JSON bodies) and :mod:`outbox` (sending
after commit with no transaction open, retries with backoff and ``Retry-After``, dead letters,
"send a test").
"""
