"""``python -m web.cli`` runs the perftrack CLI."""

from web.cli import main

main()
