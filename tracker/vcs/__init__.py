"""Commits, candidates (a base plus stacked patches), branch heads and git history."""
