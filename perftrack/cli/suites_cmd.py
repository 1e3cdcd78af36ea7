"""``perftrack suites``: validate suite files and load them into the database."""

from __future__ import annotations

from pathlib import Path

import typer

from perftrack.cli.common import console, database_session, fail, settings
from tracker.catalog.cases import sync_suites
from tracker.catalog.path_coverage import (
    CoverageReport,
    SuiteGlobs,
    TreeUnavailable,
    check_coverage,
    read_suite_globs,
    tree_files,
)
from tracker.catalog.suites import load_suites
from tracker.errors import SuiteError

app = typer.Typer(help="Benchmark suites (TOML files of cases).", no_args_is_help=True)


@app.command()
def check(
    paths: list[Path] | None = typer.Argument(
        None, help="Suite files to validate (default: every *.toml of --dir).", exists=True, dir_okay=False
    ),
    directory: Path | None = typer.Option(
        None, "--dir", help="Directory of *.toml suites (default: configured).", file_okay=False
    ),
    sglang_repo: Path | None = typer.Option(
        None,
        "--sglang-repo",
        help="A checkout, bare repository or plain tree: report every `paths` glob that matches no file in it.",
    ),
) -> None:
    """Validate suite files (file, line and field of each problem); with --sglang-repo, find dead globs."""
    tree = _tree_files(sglang_repo) if sglang_repo is not None else None
    files = list(paths or [])
    if directory is not None or not files:
        folder = directory or settings().suite_dir
        files += sorted(folder.glob("*.toml"))
        if not files:
            fail(f"no *.toml suite files in {folder}", code=2)
    bad = 0
    suites: list[SuiteGlobs] = []
    for path in files:
        try:
            suite = read_suite_globs(path)
        except SuiteError as error:
            bad += 1
            console.print(f"[red]✗[/] {error}", highlight=False)
            continue
        suites.append(suite)
        console.print(f"[green]✓[/] {path}: suite {suite.name}, {len(suite.cases)} cases", highlight=False)
    if sglang_repo is not None and tree is not None:
        report = check_coverage(suites, tree)
        _print_coverage(report, sglang_repo)
        bad += len(report.dead)
    if bad:
        raise typer.Exit(1)


def _tree_files(root: Path) -> list[str]:
    try:
        return tree_files(root)
    except TreeUnavailable as error:
        fail(f"--sglang-repo: {error}", code=2)


def _print_coverage(report: CoverageReport, root: Path) -> None:
    """The files each case selects, then every glob that selects nothing (greppable, one a line)."""
    console.print(f"{root}: {report.files_listed} files", highlight=False)
    for suite in report.suites:
        console.print(
            f"suite {suite.suite}: defaults select {_count(suite.defaults_files)} files", highlight=False
        )
        for case in suite.cases:
            console.print(
                f"  {case.slug}: {_count(case.own_files)} files by its own globs, "
                f"{_count(case.files)} with the defaults",
                highlight=False,
            )
    for dead in report.dead:
        console.print(f"[red]✗[/] {dead.describe()}", highlight=False)
    if report.ok:
        console.print("[green]✓[/] every glob selects a file", highlight=False)
    else:
        console.print(f"{len(report.dead)} glob(s) select nothing", highlight=False)


def _count(files: int | None) -> str:
    return "?" if files is None else str(files)


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
