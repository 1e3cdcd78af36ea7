"""Applying patches in a candidate's worktree, and telling whether a carried patch is already in.

A patch named by a commit sha is that one commit, cherry-picked with ``-x`` (``-m 1`` for a merge
commit). A patch named by a ref (``refs/pull/N/head``) is a branch: when it holds more than one commit
since the default branch, its commits are squashed into one (the branch's tree on the merge-base, as
a squash merge would) and that is cherry-picked, so a multi-commit pull request or one that merged
main into itself applies whole and on its own.

"Already in" (carried patches only): the patch's tip is an ancestor of HEAD, or the history of HEAD
since the merge-base with the patch holds a commit with the same ``git patch-id --stable`` as the
patch's whole diff (a cherry-pick or squash merge), or as each of its commits (a rebase merge).
"""

from __future__ import annotations

from dataclasses import dataclass

from runners.candidates._git import Git, tail
from runners.candidates.errors import CandidateBuildError

# Diff options shared by every patch-id computation, so that the ids compare equal.
_DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-renames")


@dataclass(frozen=True)
class Patch:
    """A patch resolved in the mirror."""

    ref: str  # as the job named it
    sha: str  # the commit it resolved to
    subject: str
    carried: bool

    def describe(self) -> str:
        """``carried patch refs/pull/1/head (1a2b3c4 'Fix offload')``, for error messages."""
        kind = "carried patch" if self.carried else "patch"
        return f"{kind} {self.ref} ({self.sha[:7]} {self.subject!r})"


class PatchIds:
    """Patch-ids of a worktree's history, cached per range for the carried patches of one build."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._by_range: dict[tuple[str, str], frozenset[str]] = {}

    def history(self, since: str, head: str) -> frozenset[str]:
        """Patch-ids of the non-merge commits in ``since..head``."""
        key = (since, head)
        if key not in self._by_range:
            self._by_range[key] = frozenset(self.of_commits(since, head))
        return self._by_range[key]

    def of_diff(self, old: str, new: str) -> str | None:
        """Patch-id of the diff between two commits; None when they have the same tree."""
        diff = self._git.run("diff", *_DIFF_OPTIONS, old, new)
        ids = _ids(self._git, diff.stdout)
        return ids[0] if ids else None

    def of_commits(self, since: str, tip: str) -> list[str]:
        """Patch-ids of the non-merge commits in ``since..tip``, empty ones left out."""
        # One `git log -p` for the whole range fed to one `git patch-id`, not two calls per commit.
        log = self._git.run(
            "log", "-p", "--no-merges", "--format=commit %H", *_DIFF_OPTIONS, f"{since}..{tip}"
        )
        return _ids(self._git, log.stdout)


def _ids(git: Git, patch_text: str) -> list[str]:
    if not patch_text.strip():
        return []
    output = git.out("patch-id", "--stable", input_text=patch_text)
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def already_in(git: Git, patch: Patch, patch_ids: PatchIds) -> bool:
    """Whether the worktree's HEAD already contains ``patch`` (merged, cherry-picked or squashed)."""
    if git.succeeds("merge-base", "--is-ancestor", patch.sha, "HEAD"):
        return True
    merge_base = git.run("merge-base", patch.sha, "HEAD", check=False).stdout.strip()
    if not merge_base:
        return False  # unrelated histories: nothing to compare against
    whole = patch_ids.of_diff(merge_base, patch.sha)
    if whole is None:
        return True  # the patch changes nothing relative to HEAD's history
    history = patch_ids.history(merge_base, git.out("rev-parse", "HEAD"))
    if whole in history:
        return True
    commits = patch_ids.of_commits(merge_base, patch.sha)
    return bool(commits) and all(patch_id in history for patch_id in commits)


def apply(git: Git, patch: Patch, *, base_sha: str, default_branch: str, applied: list[str]) -> None:
    """Cherry-pick ``patch`` onto the worktree's HEAD; on a conflict abort and raise naming it."""
    pick = _squashed(git, patch, default_branch) if patch.ref.startswith("refs/") else None
    args = ["cherry-pick", "--keep-redundant-commits"]
    if pick is None:
        pick = patch.sha
        args.append("-x")  # records the original sha in the message
        if len(git.out("rev-list", "--parents", "-n", "1", pick).split()) > 2:
            args += ["-m", "1"]  # a merge commit: apply what it brought into its first parent
    result = git.run(*args, pick, check=False)
    if result.returncode == 0:
        return
    conflicts = git.run("diff", "--name-only", "--diff-filter=U", check=False).stdout.split()
    git.run("cherry-pick", "--abort", check=False)
    after = f" plus {', '.join(applied)}" if applied else ""
    reason = f"conflict in {', '.join(conflicts)}" if conflicts else tail(result.stderr + result.stdout, 5)
    raise CandidateBuildError(f"{patch.describe()} does not apply on base {base_sha[:7]}{after}: {reason}")


def _squashed(git: Git, patch: Patch, default_branch: str) -> str | None:
    """A single commit holding a branch's changes when it has several commits, else None."""
    branch = f"refs/heads/{default_branch}"
    has_branch = git.succeeds("rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}")
    if has_branch and not git.succeeds("merge-base", "--is-ancestor", patch.sha, branch):
        merge_base = git.run("merge-base", patch.sha, branch, check=False).stdout.strip()
    else:
        # Already merged into the default branch (or no default branch): its commits since HEAD.
        merge_base = git.run("merge-base", patch.sha, "HEAD", check=False).stdout.strip()
    if not merge_base or int(git.out("rev-list", "--count", f"{merge_base}..{patch.sha}")) <= 1:
        return None
    author_name, author_email, author_date = git.out(
        "log", "-1", "--format=%an%x00%ae%x00%aI", patch.sha
    ).split("\x00")
    message = f"{patch.subject}\n\nSquashed from {patch.ref} at {patch.sha} on {merge_base}.\n"
    return git.out(
        "commit-tree",
        f"{patch.sha}^{{tree}}",
        "-p",
        merge_base,
        "-F",
        "-",
        input_text=message,
        env={
            "GIT_AUTHOR_NAME": author_name,
            "GIT_AUTHOR_EMAIL": author_email,
            "GIT_AUTHOR_DATE": author_date,
        },
    )
