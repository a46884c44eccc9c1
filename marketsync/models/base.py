"""Declarative base, naming convention and the column types both backends share."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import BigInteger, DateTime, MetaData, String
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

PRICE_DECIMAL_PLACES = 4
PRICE_SCALE: int = 10**PRICE_DECIMAL_PLACES  # prices are stored as integer ten-thousandths: exact on both backends


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in Python; naive UTC with microseconds in storage (sorts as text on SQLite)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


class Money(TypeDecorator[Decimal]):
    """Exact decimal amounts, up to 4 decimal places, stored as a scaled BIGINT."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> int | None:
        return money_to_storage(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        return money_from_storage(value)


def money_from_storage(value: Any) -> Decimal | None:
    """A stored Money value as the column type reads it, for raw-driver reads (at least two decimal places)."""
    if value is None:
        return None
    return (Decimal(int(value)) / PRICE_SCALE).normalize() + Decimal("0.00")


def money_to_storage(value: Decimal | None) -> int | None:
    """The bound form of a Money value: the exact scaled integer (the column type's, and for raw-driver writes)."""
    if value is None:
        return None
    scaled = (value if isinstance(value, Decimal) else Decimal(value)).scaleb(PRICE_DECIMAL_PLACES)
    integral = int(scaled)
    if integral != scaled:
        raise ValueError("amount has more than 4 decimal places")
    return integral


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UTCDateTime(), Decimal: Money(), str: String()}


ID = String(26)
