"""Say why: what differs, besides the number, between the runs before a change and after it.

Given the runs of an alert's last good and first bad commits, or of a comparison's base and head
arms, :func:`~tracker.diagnosis.findings.diagnose` returns findings, most telling first, one line
each, of the kinds :class:`~tracker.diagnosis.facts.FindingKind` lists: compile counters
(``compile``), the machine (``gpu_state``), step 0 against the steady state (``warmup``), which
stage moved (``stage``), peak memory (``memory``), a new graph break and an operator that grew in
the evidence runs (``graph_break``, ``operator``), a changed seeded output (``output``). Nothing is said where
nothing moved beyond noise or the runs did not record it. :mod:`facts`, :mod:`timing`,
:mod:`mechanics` and :mod:`findings` are pure (plain data in, findings out); :mod:`loading` reads
the runs set-based, and :mod:`evidence_loading` an evidence run's log and trace and the summaries
kept of them. Nothing here changes a row: an evidence row's states (linked at upload, read, given
up) are :mod:`tracker.workflows.evidence` and :mod:`tracker.workflows.evidence_reading`.

May import: comparisons, ingest, queue, series, outputs, notifications, vcs, catalog, observability,
access, statistics, models, db, settings, errors and enums.
"""
