"""``perftrack suites``: validate suite files and load them into the database."""

from __future__ import annotations

from pathlib import Path

import typer

from perftrack.cli.common import console, database_session, fail, settings
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suite, load_suites
from tracker.errors import SuiteError

app = typer.Typer(help="Benchmark suites (TOML files of cases).", no_args_is_help=True)


@app.command()
def check(paths: list[Path] = typer.Argument(..., help="Suite files to validate.", exists=True)) -> None:
    """Validate suite files; print each problem with file, line and field."""
    bad = 0
    for path in paths:
        try:
            suite = load_suite(path)
        except SuiteError as error:
            bad += 1
            console.print(f"[red]✗[/] {error}", highlight=False)
            continue
        console.print(f"[green]✓[/] {path}: suite {suite.name}, {len(suite.cases)} cases", highlight=False)
    if bad:
        raise typer.Exit(1)


@app.command()
def sync(
    directory: Path | None = typer.Option(
        None, "--dir", help="Directory of *.toml suites (default: configured)."
    ),
) -> None:
    """Load the suites into the database; a changed case configuration becomes a new version."""
    folder = directory or settings().suite_dir
    try:
        suites = load_suites(folder)
    except SuiteError as error:
        fail(str(error))
    with database_session(prepare=False) as session:
        report = sync_suites(session=session, suites=suites)
    console.print(
        f"{len(report.created)} new cases, {len(report.new_versions)} new versions, "
        f"{len(report.updated)} updated, {len(report.unchanged)} unchanged"
    )
