"""perftrack's HTTP layer: the JSON API under /api/v1, server-rendered pages, and the CLI.

Thin: handlers validate, call ``tracker`` functions and shape responses.
"""
