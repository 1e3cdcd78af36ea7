"""Fake executables (sglang, nvidia-smi) for the workload tests."""
