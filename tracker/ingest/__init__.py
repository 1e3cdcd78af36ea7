"""Storing results: limits, redaction, measurement conditions, each run written once."""
