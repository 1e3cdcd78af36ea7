"""``python -m perftrack.cli`` runs the perftrack CLI."""

from perftrack.cli import main

main()
