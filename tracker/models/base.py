"""Declarative base, naming convention and the column aliases shared by every model."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, ClassVar

from sqlalchemy import JSON, BigInteger, DateTime, Enum, Integer, MetaData, String, TypeDecorator, func
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, mapped_column

# Stable constraint names, so Alembic migrations are the same on SQLite and PostgreSQL.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite stores naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are ambiguous; pass an aware UTC datetime")
        return value.astimezone(dt.UTC)

    def process_result_value(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


# JSON on SQLite, JSONB on PostgreSQL.
JSONType = JSON().with_variant(postgresql.JSONB(), "postgresql")
# 64-bit ids on PostgreSQL, INTEGER PRIMARY KEY (rowid alias) on SQLite.
BigId = BigInteger().with_variant(Integer(), "sqlite")


def utcnow() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.UTC)


int_pk = Annotated[int, mapped_column(BigId, primary_key=True)]
created_at = Annotated[
    dt.datetime, mapped_column(UTCDateTime(), default=utcnow, server_default=func.now(), nullable=False)
]
json_dict = Annotated[dict[str, Any], mapped_column(JSONType, default=dict, nullable=False)]
json_list = Annotated[list[Any], mapped_column(JSONType, default=list, nullable=False)]
str_slug = Annotated[str, mapped_column(String(128), nullable=False)]
str_sha = Annotated[str, mapped_column(String(40), nullable=False)]


class Base(DeclarativeBase):
    """Base of every ORM class."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dt.datetime: UTCDateTime()}


def str_enum(enum_cls: type[StrEnum], name: str) -> Enum:
    """A portable column type storing the enum's values, not its member names."""
    return Enum(
        enum_cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda members: [member.value for member in members],
        validate_strings=True,
    )
