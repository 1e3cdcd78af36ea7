"""perftrack's HTTP layer: the JSON API under /api/v1 and the server-rendered pages.

Thin: handlers validate, call ``tracker`` functions and shape responses. The command line is
``perftrack.cli``, which may import this package; this package never imports it or ``runners``.
"""
