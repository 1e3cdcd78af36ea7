"""Create the toy git repository whose history holds both incidents (see :mod:`runners.toy.history`).

Commits are written with git's plumbing (``hash-object``, ``update-index``, ``write-tree``,
``commit-tree``) from the files under ``source/``, with fixed authors, committers and dates, so
the same sources give the same shas on every machine. ``main`` is checked out at the end; each
open pull request exists as a branch (``pr/101-...``) and as GitHub's ref ``refs/pull/101/head``.

Creating is idempotent: a repository built from the same sources by the same code is recognised
(by a fingerprint kept in ``.git/perftrack-toy.json``) and reused as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from runners.toy.history import MAIN, PULL_REQUESTS, Author, ChangeKind, PullRequestSpec, Step, step_files

# Bump when the way commits are written changes (message layout, dates, refs): it changes shas.
_FORMAT = 1
_MARKER = "perftrack-toy.json"
_START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
_PR_DELAY = timedelta(hours=6)
_FILE_MODE = "100644"


class ToyRepositoryError(RuntimeError):
    """The toy repository cannot be created at the path given, or git failed."""


@dataclass(frozen=True)
class ToyCommit:
    """One commit of the toy history and the effect it is scripted to have."""

    sha: str
    title: str
    kind: ChangeKind
    effect: str
    branch: str  # "main" or the pull request's branch
    source: str  # the directory under runners/toy/source/ it was written from
    incident: int | None = None  # 1: graph breaks from a disabled kernel; 2: offload hooks during compile
    needs_flags: tuple[str, ...] = ()  # case flags without which the effect does not show
    small_with: tuple[str, ...] = ()  # case flags with which it shows only a little (near 2 %)
    changes_output: bool = False  # the seeded picture changes beyond the 40 dB PSNR tolerance


@dataclass(frozen=True)
class ToyPullRequest:
    """An open pull request carrying one fix, branched off ``main`` before the fix landed there."""

    number: int
    title: str
    branch: str
    ref: str  # refs/pull/<number>/head
    base_sha: str  # the main commit it branches off
    head_sha: str
    commits: tuple[ToyCommit, ...]
    fixes_sha: str | None  # the regression on main it fixes (None: a change of its own)
    landed_sha: str  # the main commit that later applies the same patch


@dataclass(frozen=True)
class ToyRepository:
    """The created repository: ``main``'s commits, oldest first, and the open pull requests."""

    path: Path
    default_branch: str
    commits: tuple[ToyCommit, ...]
    pull_requests: tuple[ToyPullRequest, ...]

    @property
    def head_sha(self) -> str:
        """The tip of ``main``."""
        return self.commits[-1].sha

    def commit(self, key: str) -> ToyCommit:
        """A main commit by sha (or unambiguous prefix of at least 7) or by source name (``04-fused-layernorm``)."""
        matches = [c for c in self.commits if c.source == key or (len(key) >= 7 and c.sha.startswith(key))]
        if len(matches) != 1:
            raise KeyError(f"no single main commit matches {key!r}")
        return matches[0]

    def pull_request(self, number: int) -> ToyPullRequest:
        """An open pull request by number."""
        for pull_request in self.pull_requests:
            if pull_request.number == number:
                return pull_request
        raise KeyError(f"no pull request #{number}")


def create_toy_repository(path: Path, *, replace_outdated: bool = False) -> ToyRepository:
    """Create the toy repository at ``path`` (which must not exist, or be an empty directory).

    If ``path`` already holds the toy repository built from the current sources, it is reused.
    A toy repository from other sources raises :class:`ToyRepositoryError`, unless
    ``replace_outdated`` is set: then it is deleted and built again. Anything else at ``path`` is
    never touched.
    """
    path = Path(path).absolute()
    fingerprint = _fingerprint()
    if path.exists() and not (path.is_dir() and not any(path.iterdir())):
        existing = _read_marker(path)
        if existing is not None and existing.get("fingerprint") == fingerprint:
            repository = _from_marker(path, existing)
            _check_refs(repository)
            return repository
        if existing is None:
            raise ToyRepositoryError(f"{path} exists and is not a toy repository; choose an empty path")
        if not replace_outdated:
            raise ToyRepositoryError(
                f"{path} holds a toy repository built from other sources; remove it "
                "(or pass replace_outdated=True) to build the current one"
            )
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Build next to the target and rename it into place, so that an interrupted build never
    # leaves a half-written repository at ``path``.
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        repository = _build(staging, fingerprint)
        if path.exists():
            path.rmdir()
        staging.rename(path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return _relocated(repository, path)


def _build(root: Path, fingerprint: str) -> ToyRepository:
    git = _Git(root)
    git.run("init", "--quiet", "--initial-branch=main")
    index = root / ".git" / "perftrack-build-index"
    commits: list[ToyCommit] = []
    tip: str | None = None
    when = _START
    for step in MAIN:
        tip = git.commit(step, tip, when, index)
        commits.append(_toy_commit(tip, step, "main"))
        when += timedelta(days=1)
    assert tip is not None
    git.run("update-ref", "refs/heads/main", tip)
    by_source = {c.source: c for c in commits}
    pull_requests = []
    for spec in PULL_REQUESTS:
        base = by_source[spec.fork_after]
        fork_day = _START + timedelta(days=[s.source for s in MAIN].index(spec.fork_after))
        head = git.commit(spec.step, base.sha, fork_day + _PR_DELAY, index)
        git.run("update-ref", f"refs/heads/{spec.branch}", head)
        git.run("update-ref", f"refs/pull/{spec.number}/head", head)
        pull_requests.append(_toy_pull_request(spec, head, by_source))
    index.unlink(missing_ok=True)
    git.run("symbolic-ref", "HEAD", "refs/heads/main")
    git.run("reset", "--quiet", "--hard", "main")
    repository = ToyRepository(root, "main", tuple(commits), tuple(pull_requests))
    _write_marker(repository, fingerprint)
    return repository


def _toy_pull_request(spec: PullRequestSpec, head: str, by_source: Mapping[str, ToyCommit]) -> ToyPullRequest:
    """The open pull request ``spec`` with its commit at ``head``; ``by_source`` holds main's commits."""
    return ToyPullRequest(
        number=spec.number,
        title=spec.step.title,
        branch=spec.branch,
        ref=f"refs/pull/{spec.number}/head",
        base_sha=by_source[spec.fork_after].sha,
        head_sha=head,
        commits=(_toy_commit(head, spec.step, spec.branch),),
        fixes_sha=None if spec.fixes is None else by_source[spec.fixes].sha,
        landed_sha=by_source[spec.lands_as].sha,
    )


def _toy_commit(sha: str, step: Step, branch: str) -> ToyCommit:
    return ToyCommit(
        sha=sha,
        title=step.title,
        kind=step.kind,
        effect=step.effect,
        branch=branch,
        source=step.source,
        incident=step.incident,
        needs_flags=step.needs_flags,
        small_with=step.small_with,
        changes_output=step.changes_output,
    )


class _Git:
    """Runs git in one repository with a fixed identity and none of the user's configuration."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # The caller's environment is passed on (PATH, locale) without git's own variables, which
        # could point git at another repository, and without the user's and system git config,
        # which could sign commits, convert line endings or change the default branch.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env = {**inherited, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def run(self, *args: str, input_bytes: bytes | None = None, env: dict[str, str] | None = None) -> str:
        try:
            result = subprocess.run(
                ["git", *args],
                cwd=self.root,
                env={**self.env, **(env or {})},
                input=input_bytes,
                capture_output=True,
                check=False,
            )
        except OSError as error:
            raise ToyRepositoryError(f"cannot run git: {error}") from error
        if result.returncode != 0:
            message = result.stderr.decode(errors="replace").strip()
            raise ToyRepositoryError(f"git {' '.join(args[:2])} failed: {message}")
        return result.stdout.decode().strip()

    def commit(self, step: Step, parent: str | None, when: datetime, index: Path) -> str:
        """Write ``step``'s files over ``parent``'s tree and commit them; returns the new sha."""
        index_env = {"GIT_INDEX_FILE": str(index)}
        if parent is None:
            index.unlink(missing_ok=True)
        else:
            self.run("read-tree", parent, env=index_env)
        for name, content in step_files(step).items():
            blob = self.run("hash-object", "-w", "--stdin", input_bytes=content)
            self.run("update-index", "--add", "--cacheinfo", f"{_FILE_MODE},{blob},{name}", env=index_env)
        tree = self.run("write-tree", env=index_env)
        message = f"{step.title}\n\n{step.body}\n"
        parents = ["-p", parent] if parent else []
        return self.run(
            "commit-tree", tree, *parents, input_bytes=message.encode(), env=_identity(step.author, when)
        )


def _identity(author: Author, when: datetime) -> dict[str, str]:
    stamp = when.isoformat()
    return {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": author.name,
        "GIT_COMMITTER_EMAIL": author.email,
        "GIT_COMMITTER_DATE": stamp,
    }


def _fingerprint() -> str:
    """SHA-256 over everything the shas depend on: the script, the sources and the format."""
    digest = hashlib.sha256(f"format {_FORMAT}\n".encode())
    steps = [("main", step) for step in MAIN] + [(spec.branch, spec.step) for spec in PULL_REQUESTS]
    for branch, step in steps:
        digest.update(repr((branch, step)).encode())
        for name, content in step_files(step).items():
            digest.update(f"{name}\0{len(content)}\0".encode())
            digest.update(content)
    return digest.hexdigest()


def _write_marker(repository: ToyRepository, fingerprint: str) -> None:
    document = {
        "fingerprint": fingerprint,
        "main": [c.sha for c in repository.commits],
        "pull_requests": {str(p.number): p.head_sha for p in repository.pull_requests},
    }
    (repository.path / ".git" / _MARKER).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def _read_marker(path: Path) -> dict[str, object] | None:
    marker = path / ".git" / _MARKER
    try:
        document = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _from_marker(path: Path, document: dict[str, object]) -> ToyRepository:
    """Rebuild the description of a reused repository from its marker and the script."""
    main = document.get("main")
    heads = document.get("pull_requests")
    if not isinstance(main, list) or len(main) != len(MAIN) or not isinstance(heads, dict):
        raise ToyRepositoryError(f"{path / '.git' / _MARKER} is damaged; remove {path} to rebuild it")
    commits = tuple(_toy_commit(str(sha), step, "main") for sha, step in zip(main, MAIN, strict=True))
    by_source = {c.source: c for c in commits}
    pull_requests = []
    for spec in PULL_REQUESTS:
        head = str(heads.get(str(spec.number), ""))
        pull_requests.append(_toy_pull_request(spec, head, by_source))
    return ToyRepository(path, "main", commits, tuple(pull_requests))


def _check_refs(repository: ToyRepository) -> None:
    """A reused repository must still have its branches where they were written."""
    git = _Git(repository.path)
    expected = {"refs/heads/main": repository.head_sha}
    for pull_request in repository.pull_requests:
        expected[f"refs/heads/{pull_request.branch}"] = pull_request.head_sha
        expected[pull_request.ref] = pull_request.head_sha
    for ref, sha in expected.items():
        try:
            actual = git.run("rev-parse", "--verify", "--quiet", ref)
        except ToyRepositoryError:
            actual = ""
        if actual != sha:
            raise ToyRepositoryError(
                f"{repository.path}: {ref} is at {actual or 'nothing'}, expected {sha}; remove the directory to rebuild it"
            )


def _relocated(repository: ToyRepository, path: Path) -> ToyRepository:
    return ToyRepository(path, repository.default_branch, repository.commits, repository.pull_requests)
