"""Runs' seeded outputs: storing what a run generated, and checking one side's output against another's.

May import: catalog, vcs and everything below them (never queue or series).
"""
