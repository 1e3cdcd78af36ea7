"""What a ``/perf`` command will compare, read from GitHub before anything is written.

The head arm is ``merge base + stacked PRs + this PR``, the base arm the same without this PR. Each
pull request is pinned to the head commit it had when the command was read
(``refs/pull/N/head@SHA``): a push during the rounds is not built; it gets a comparison of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.catalog.cases import list_current_cases, list_hardware_kinds
from tracker.catalog.paths import select_cases
from tracker.github.client import GithubClient, GithubError
from tracker.github.commands import CommandError, PerfCommand, check_hardware, expand_cases
from tracker.github.render import code
from tracker.models import Case, Repository
from tracker.vcs.commits import pinned_pull_ref

DEFAULT_ROUNDS = 2
FILES_PER_PAGE = 100
MAX_FILE_PAGES = 30  # GitHub lists at most 3000 files of a pull request


@dataclass(frozen=True)
class ComparisonPlan:
    """A comparison to create, with everything GitHub said about it."""

    repository_id: int
    merge_base: str
    head_sha: str
    base_patches: tuple[str, ...]
    head_patches: tuple[str, ...]
    cases: tuple[str, ...]
    selection: str
    hardware: tuple[str, ...] | None
    rounds: int
    command: str


def plan_comparison(
    *,
    session: Session,
    client: GithubClient,
    repository: str,
    pr_number: int,
    command: PerfCommand,
    head_sha: str | None = None,
) -> ComparisonPlan:
    """Read the pull request (its head, merge base, changed files, stacked PRs) and the catalog.

    ``head_sha``: the head to measure (a push names it); ``None`` takes the PR's head now.
    :class:`CommandError` says what the user must change; :class:`GithubError` is GitHub's.
    """
    tracked = tracked_repository(session=session, github_repository=repository)
    current = [case for case in list_current_cases(session=session) if case.repository_id == tracked.id]
    if not current:
        raise CommandError(f"no case measures {repository} yet")
    if command.hardware:  # unknown names are refused before anything else is looked up
        check_hardware(command.hardware, [kind.name for kind in list_hardware_kinds(session=session)])
    pull = _pull(client, repository, pr_number)
    if pull.get("state", "open") != "open":  # closed since the comment (the bot was held up)
        raise CommandError(f"pull request #{pr_number} is closed now; reopen it to measure it")
    if command.cases:
        cases = expand_cases(command.cases, [case.slug for case in current])
        selection = "named in the command"
    else:
        files = _changed_files(client, repository, pr_number)
        eligible = [case for case in current if _runs_on_any(case, command.hardware)]
        if not eligible:
            raise CommandError(f"no case of {repository} runs on {', '.join(command.hardware)}")
        chosen = select_cases([(case.slug, case.paths) for case in eligible], files)
        cases, selection = chosen.chosen, chosen.describe(len(files), quote=code)
    hardware = _hardware(session=session, current=current, cases=cases, named=command.hardware)
    stacked: list[str] = []
    for number in command.stacked:
        if number == pr_number:
            raise CommandError(f"#{number} is this pull request; `with` names other pull requests")
        stacked.append(pinned_pull_ref(number, _head_sha(_pull(client, repository, number))))
    head = head_sha or _head_sha(pull)
    base_ref = pull.get("base", {}).get("ref") if isinstance(pull.get("base"), dict) else None
    if not isinstance(base_ref, str) or not base_ref:
        raise GithubError(f"GitHub's pull request #{pr_number} has no base branch")
    compared = client.request(
        "GET", f"/repos/{repository}/compare/{base_ref}...{head}", repository=repository
    )
    merge_base = str(compared["merge_base_commit"]["sha"])
    return ComparisonPlan(
        repository_id=tracked.id,
        merge_base=merge_base,
        head_sha=head,
        base_patches=tuple(stacked),
        head_patches=(*stacked, pinned_pull_ref(pr_number, head)),
        cases=tuple(cases),
        selection=selection,
        hardware=tuple(hardware) if hardware is not None else None,
        rounds=command.rounds or DEFAULT_ROUNDS,
        command=command.text,
    )


def tracked_repository(*, session: Session, github_repository: str) -> Repository:
    """The tracked repository a GitHub ``owner/name`` is (by its URL, else by its name)."""
    wanted = github_repository.lower()
    repositories = list(session.scalars(select(Repository).order_by(Repository.id)))
    for repository in repositories:
        url = repository.url.lower().removesuffix(".git").rstrip("/")
        if url.endswith(("/" + wanted, ":" + wanted)):
            return repository
    short = wanted.rsplit("/", 1)[-1]
    for repository in repositories:
        if repository.name.lower() == short:
            return repository
    known = ", ".join(repository.name for repository in repositories) or "none"
    raise CommandError(f"perftrack does not track {github_repository} (tracked: {known})")


def _hardware(
    *, session: Session, current: list[Case], cases: list[str], named: tuple[str, ...]
) -> list[str] | None:
    """The hardware kinds to pass on: each case runs on the named kinds it is set up for.

    A comparison takes one hardware list for all its cases, so the named kinds are narrowed to
    those the cases share; cases set up for different subsets of them are refused with the reason.
    """
    if not named:
        return None
    chosen = check_hardware(named, [kind.name for kind in list_hardware_kinds(session=session)])
    by_slug = {case.slug: case for case in current}
    subsets: dict[str, set[str]] = {}
    for slug in cases:
        runs_on = {entry.hardware_kind.name for entry in by_slug[slug].hardware}
        subset = runs_on & set(chosen)
        if not subset:
            raise CommandError(
                f"case `{slug}` does not run on {', '.join(chosen)}; it runs on {', '.join(sorted(runs_on))}"
            )
        subsets[slug] = subset
    if len({frozenset(subset) for subset in subsets.values()}) > 1:
        listing = "; ".join(f"`{slug}` on {', '.join(sorted(subset))}" for slug, subset in subsets.items())
        raise CommandError(f"the cases run on different hardware ({listing}); ask for them separately")
    shared = next(iter(subsets.values()))
    return [name for name in chosen if name in shared]


def _pull(client: GithubClient, repository: str, number: int) -> dict[str, Any]:
    try:
        pull = client.request("GET", f"/repos/{repository}/pulls/{number}", repository=repository)
    except GithubError as error:
        if error.status == 404:
            raise CommandError(f"pull request #{number} does not exist in {repository}") from None
        raise
    if not isinstance(pull, dict):
        raise GithubError(f"GitHub answered pull request #{number} with no object")
    return pull


def _head_sha(pull: dict[str, Any]) -> str:
    head = pull.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    if not isinstance(sha, str) or not sha:
        raise GithubError(f"GitHub's pull request #{pull.get('number')} has no head sha")
    return sha.lower()


def _runs_on_any(case: Case, hardware: tuple[str, ...]) -> bool:
    wanted = {name.lower() for name in hardware}
    return not wanted or any(entry.hardware_kind.name.lower() in wanted for entry in case.hardware)


def _changed_files(client: GithubClient, repository: str, number: int) -> list[str]:
    """The paths a pull request touches (renames count by both names), page by page.

    GitHub lists at most 3000 files per pull request, 100 a page.
    """
    files: list[str] = []
    for page in range(1, MAX_FILE_PAGES + 1):
        answer = client.request(
            "GET",
            f"/repos/{repository}/pulls/{number}/files?per_page={FILES_PER_PAGE}&page={page}",
            repository=repository,
        )
        entries = answer if isinstance(answer, list) else []
        for entry in entries:
            files.append(str(entry["filename"]))
            if entry.get("previous_filename"):
                files.append(str(entry["previous_filename"]))
        if len(entries) < FILES_PER_PAGE:
            break
    return files
