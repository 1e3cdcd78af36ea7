"""Jobs, leases, runners and attempts; it reports the jobs that ended and never reacts to them.

May import: vcs, catalog and everything below them (never series).
"""
