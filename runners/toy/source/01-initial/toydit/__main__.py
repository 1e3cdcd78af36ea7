"""``python -m toydit generate ...``."""

from .cli import main

raise SystemExit(main())
