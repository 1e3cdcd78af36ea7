"""Read models for the pages and the API: nothing here writes.

May import: detection and everything below it (never github).
"""
