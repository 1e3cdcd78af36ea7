"""What can be measured: repositories, hardware kinds and benchmark cases (with thresholds)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tracker.enums import RunMode, Workload
from tracker.models.base import Base, created_at, int_pk, json_dict, json_list, str_enum, str_slug


class Repository(Base):
    """A git repository whose commits are measured (``sglang``, the demo's toy repository)."""

    __tablename__ = "repositories"

    id: Mapped[int_pk]
    name: Mapped[str_slug] = mapped_column(unique=True)
    url: Mapped[str] = mapped_column(String(512), nullable=False, comment="clone URL or local path")
    default_branch: Mapped[str] = mapped_column(String(255), nullable=False, default="main")
    created_at: Mapped[created_at]


class HardwareKind(Base):
    """A kind of machine jobs can require (``H200``, ``GB300``, ``cpu``)."""

    __tablename__ = "hardware_kinds"

    id: Mapped[int_pk]
    name: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    created_at: Mapped[created_at]


class Case(Base):
    """One version of a benchmark configuration; a changed parameter makes a new version (series).

    ``slug`` names the case across versions; ``config_hash`` (SHA-256 of the canonical parameters)
    identifies the version. Only one version per slug is ``is_current``.
    """

    __tablename__ = "cases"
    __table_args__ = (
        UniqueConstraint("slug", "version"),
        UniqueConstraint("slug", "config_hash"),
        Index("ix_cases_slug_current", "slug", "is_current"),
    )

    id: Mapped[int_pk]
    slug: Mapped[str_slug]
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    config_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    is_current: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    suite: Mapped[str_slug]
    title: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    model: Mapped[str] = mapped_column(
        String(255), nullable=False, comment="model path, e.g. Qwen/Qwen-Image"
    )
    model_family: Mapped[str_slug] = mapped_column(comment="groups cases of one model on the overview")
    task: Mapped[str] = mapped_column(String(32), nullable=False, comment="t2i, t2v, i2i, ...")
    workload: Mapped[Workload] = mapped_column(str_enum(Workload, "workload"), nullable=False)
    mode: Mapped[RunMode] = mapped_column(str_enum(RunMode, "run_mode"), nullable=False)
    repository_id: Mapped[int | None] = mapped_column(ForeignKey("repositories.id"))
    num_gpus: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    threshold_pct: Mapped[float] = mapped_column(
        Float, nullable=False, comment="model threshold in percent; per-hardware overrides apart"
    )
    params: Mapped[json_dict] = mapped_column(comment="generation parameters (prompt, size, steps, seed)")
    flags: Mapped[json_dict] = mapped_column(comment="serving flags (compile, warmup, offload, parallelism)")
    requests: Mapped[int] = mapped_column(
        Integer, nullable=False, default=1, comment="timed requests per run"
    )
    timeout_s: Mapped[int] = mapped_column(Integer, nullable=False, default=3600)
    output_psnr_db: Mapped[float | None] = mapped_column(
        Float, comment="PSNR at or above which two outputs count as the same picture; null: the default"
    )
    confirmation_max_rounds: Mapped[int | None] = mapped_column(
        Integer, comment="cap on a suspect's paired rounds (each two runs); null: the policy's"
    )
    paths: Mapped[json_list] = mapped_column(
        server_default=text("'[]'"),
        comment="globs of repository files whose change selects this case for a bare /perf",
    )
    created_at: Mapped[created_at]

    repository: Mapped[Repository | None] = relationship()
    hardware: Mapped[list[CaseHardware]] = relationship(
        back_populates="case", cascade="all, delete-orphan", lazy="selectin", order_by="CaseHardware.id"
    )

    def threshold_for(self, hardware_name: str) -> float:
        """The threshold (percent) that applies to this case on a hardware kind."""
        for entry in self.hardware:
            if entry.hardware_kind.name == hardware_name and entry.threshold_pct is not None:
                return entry.threshold_pct
        return self.threshold_pct

    def confirmation_cap_for(self, hardware_name: str) -> int | None:
        """The cap on a suspect's paired rounds on a hardware kind; ``None``: the policy's."""
        for entry in self.hardware:
            if entry.hardware_kind.name == hardware_name and entry.confirmation_max_rounds is not None:
                return entry.confirmation_max_rounds
        return self.confirmation_max_rounds

    @property
    def hardware_names(self) -> list[str]:
        """The hardware kinds this case is set up to run on."""
        return [entry.hardware_kind.name for entry in self.hardware]

    def describe(self) -> dict[str, Any]:
        """Parameters and flags in one mapping, for display."""
        return {**self.params, **self.flags}


class CaseHardware(Base):
    """A hardware kind a case runs on (nightly and default ``/perf``), with an optional threshold.

    ``threshold_pct`` overrides the case's model threshold on this kind (e.g. noisier GB300 nodes),
    ``confirmation_max_rounds`` its cap on a suspect's paired rounds.
    """

    __tablename__ = "case_hardware"
    __table_args__ = (UniqueConstraint("case_id", "hardware_kind_id"),)

    id: Mapped[int_pk]
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id", ondelete="CASCADE"), nullable=False)
    hardware_kind_id: Mapped[int] = mapped_column(ForeignKey("hardware_kinds.id"), nullable=False)
    threshold_pct: Mapped[float | None] = mapped_column(Float)
    confirmation_max_rounds: Mapped[int | None] = mapped_column(
        Integer, comment="the case's cap on paired rounds on this kind; null: the case's"
    )

    case: Mapped[Case] = relationship(back_populates="hardware")
    hardware_kind: Mapped[HardwareKind] = relationship(lazy="joined")


class CarriedPatch(Base):
    """A patch every candidate of a repository (or of one hardware kind) carries until it is merged.

    Runners skip it when the base already contains it (ancestor or same patch-id).
    """

    __tablename__ = "carried_patches"
    __table_args__ = (UniqueConstraint("repository_id", "ref", "hardware_kind_id"),)

    id: Mapped[int_pk]
    repository_id: Mapped[int] = mapped_column(
        ForeignKey("repositories.id", ondelete="CASCADE"), nullable=False
    )
    ref: Mapped[str] = mapped_column(String(255), nullable=False, comment="commit sha or refs/pull/N/head")
    hardware_kind_id: Mapped[int | None] = mapped_column(
        ForeignKey("hardware_kinds.id"), comment="only for this hardware kind; NULL: every kind"
    )
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0, comment="order of application")
    reason: Mapped[str] = mapped_column(Text, nullable=False, default="")
    created_at: Mapped[created_at]

    hardware_kind: Mapped[HardwareKind | None] = relationship(lazy="joined")
