"""Jobs, leases, runners and attempts; it reports the jobs that ended and never reacts to them."""
