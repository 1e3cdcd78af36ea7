"""Read models for the pages and the API: nothing here writes.

May import: detection, diagnosis and everything below them (never github).
"""
