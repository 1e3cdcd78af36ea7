"""Commits and candidates: what a run measured (a base commit plus ordered patches)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ColumnElement, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.enums import PatchKind
from tracker.models.base import Base, UTCDateTime, created_at, int_pk, json_list, str_enum, str_sha
from tracker.models.catalog import Repository


class Commit(Base):
    """A commit of a tracked repository.

    ``sha`` is lowercase hex, 7 to 40 characters (an import may know only an abbreviation).
    ``committed_at`` orders series; when the committer time is unknown it holds the time perftrack
    first saw the commit and ``committed_at_estimated`` is true until a real time arrives.
    """

    __tablename__ = "commits"
    __table_args__ = (
        UniqueConstraint("repository_id", "sha"),
        Index("ix_commits_repository_time", "repository_id", "committed_at"),
    )

    id: Mapped[int_pk]
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), nullable=False)
    sha: Mapped[str_sha]
    parents: Mapped[json_list] = mapped_column(comment="parent shas, first parent first")
    title: Mapped[str] = mapped_column(String(512), nullable=False, default="")
    author_name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    author_email: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    committed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, comment="UTC")
    committed_at_estimated: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    branch: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[created_at]

    repository: Mapped[Repository] = relationship()

    @property
    def short_sha(self) -> str:
        """The first 7 hex digits, as git prints them."""
        return self.sha[:7]


class Candidate(Base):
    """A base commit plus an ordered list of patches; a plain commit is a candidate with none.

    ``key`` is a digest of the base sha and the patch refs in order, so one candidate is stored once.
    """

    __tablename__ = "candidates"

    id: Mapped[int_pk]
    key: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), nullable=False)
    base_commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id"), nullable=False, index=True)
    label: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    patch_count: Mapped[int] = mapped_column(
        Integer, nullable=False, default=0, server_default="0", comment="0: the plain base commit"
    )
    created_at: Mapped[created_at]

    base_commit: Mapped[Commit] = relationship(lazy="joined")
    patches: Mapped[list[CandidatePatch]] = relationship(
        back_populates="candidate",
        cascade="all, delete-orphan",
        order_by="CandidatePatch.position",
        lazy="selectin",
    )

    @hybrid_property
    def is_plain(self) -> bool:
        """Whether this candidate is just its base commit (also a SQL expression: ``patch_count = 0``)."""
        return self.patch_count == 0

    @is_plain.inplace.expression
    @classmethod
    def _is_plain_expression(cls) -> ColumnElement[bool]:
        return cls.patch_count == 0


class CandidatePatch(Base):
    """One patch cherry-picked on a candidate's base, at ``position`` (0 first)."""

    __tablename__ = "candidate_patches"
    __table_args__ = (UniqueConstraint("candidate_id", "position"),)

    id: Mapped[int_pk]
    candidate_id: Mapped[int] = mapped_column(ForeignKey("candidates.id", ondelete="CASCADE"), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[PatchKind] = mapped_column(str_enum(PatchKind, "patch_kind"), nullable=False)
    ref: Mapped[str] = mapped_column(
        String(255), nullable=False, comment="commit sha or PR ref such as refs/pull/43601/head"
    )
    pr_number: Mapped[int | None] = mapped_column(Integer)
    resolved_sha: Mapped[str | None] = mapped_column(String(40), comment="sha the ref pointed to when built")
    title: Mapped[str] = mapped_column(Text, nullable=False, default="")

    candidate: Mapped[Candidate] = relationship(back_populates="patches")
