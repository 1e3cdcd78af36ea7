"""perftrack's domain core: the database and its models, and the packages that act on them, in layers.

Each package's docstring says what it owns and which packages it may import; import-linter enforces
the layers (pyproject.toml) and docs/architecture.md draws them. The tracker imports no web framework
and nothing from ``runners``, ``web`` or ``perftrack``; the API, the pages and the CLI call into it.
"""
