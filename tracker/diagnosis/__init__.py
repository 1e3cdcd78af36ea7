"""Say why: what differs, besides the number, between the runs before a change and after it.

Given the runs of an alert's last good and first bad commits, or of a comparison's base and head
arms, :func:`~tracker.diagnosis.findings.diagnose` returns findings, most telling first, one line
each: compile counters (``compile``), the machine (``gpu_state``), step 0 against the steady state
(``warmup``), which stage moved (``stage``), peak memory (``memory``). Nothing is said where
nothing moved beyond noise or the runs did not record it. :mod:`facts`, :mod:`timing`,
:mod:`mechanics` and :mod:`findings` are pure (plain data in, findings out); :mod:`loading` reads
the runs set-based.

May import: comparisons, ingest and everything below them (never detection: siblings stay apart).
"""
