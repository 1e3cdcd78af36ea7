"""Workloads: how a case is executed on a built candidate tree (real ``sglang``, or the CPU toy)."""
