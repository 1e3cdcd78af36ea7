"""Server-rendered HTML pages (Jinja2), one module per page family."""
