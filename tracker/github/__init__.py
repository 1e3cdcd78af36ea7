"""The PR comment bot: ``/perf`` commands in pull-request comments become comparisons.

May import: detection, diagnosis, comparisons, ingest, queue, series, outputs, notifications, vcs,
catalog, observability, access, statistics, models, db, settings, errors and enums.

Modules: :mod:`events` (the deliveries the bot reads, checked field by field, from the
:mod:`payloads` models), :mod:`webhook` (signature check), :mod:`inbox` (deliveries stored on arrival and carried out afterwards, with
retries), :mod:`bot` (decide with GitHub's answers, then act in one write), :mod:`access` (who may
run PR code), :mod:`plan` (what a comparison will measure, pinned heads), :mod:`commands` (the pure
command parser), :mod:`client` (the GitHub REST client), :mod:`status` (the PR's comment, commit
status and check run, queued as the comparison moves), :mod:`checks` (the check run's body, its
conclusion policy and its sending; App mode), :mod:`rerun` (a check run's Re-run, planned after
the permission check), :mod:`render` (the comment's Markdown) and :mod:`outbox` (every GitHub write, queued in
the database and sent after commit with backoff).
"""
