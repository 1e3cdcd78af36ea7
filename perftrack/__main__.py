"""``python -m perftrack`` runs the perftrack command line."""

from perftrack.cli import main

main()
