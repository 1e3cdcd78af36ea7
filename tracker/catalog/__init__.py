"""What is measured: suite files, the cases and hardware kinds they declare, path globs."""
