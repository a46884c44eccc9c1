"""The inventory: products (SKUs) and their marketplace listings."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base


class Product(Base):
    __tablename__ = "products"
    __table_args__ = (
        # Exact casing is unique (equal SKUs have equal sku_lower); case variants may coexist (spec: Ambiguous / 409
        # conflict). One index for both: every case-insensitive read searches its first two columns (migration 0022;
        # SQLite also keeps the UNIQUE (account_id, sku) of its CREATE TABLE).
        Index("uq_products_account_sku_lower_sku", "account_id", "sku_lower", "sku", unique=True),
        Index("ix_products_account_modified", "account_id", "modified_at", "id"),
        # No index on price or stock: every push moves both (migration 0039, docs/decisions/0457).
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    sku: Mapped[str] = mapped_column(String(200))
    # Code point order on both backends (SQLite's BINARY; "C" on PostgreSQL, whatever the database's default, from
    # migration 0027): a SKU prefix is one range of the SKU index (docs/decisions/0336-catalogue-search.md).
    sku_lower: Mapped[str] = mapped_column(String(200).with_variant(String(200, collation="C"), "postgresql"))
    price: Mapped[Decimal | None]
    quantity: Mapped[int] = mapped_column(Integer, default=0)
    title: Mapped[str | None] = mapped_column(String(500))
    modified_at: Mapped[datetime]
    created_at: Mapped[datetime]


class ProductCount(Base):
    """How many products an account has: an Offset page's exact TotalCount without reading them all. Kept by the
    database's triggers on products (migration 0021, docs/decisions/0298-product-counts.md), never by the code."""

    __tablename__ = "product_counts"

    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    products: Mapped[int] = mapped_column(BigInteger)


class Listing(Base):
    """The durable record of where a SKU exists: it makes an update revise instead of duplicate."""

    __tablename__ = "listings"
    __table_args__ = (
        UniqueConstraint("product_id", "marketplace_id", name="uq_listings_product_marketplace"),
        Index("ix_listings_marketplace", "marketplace_id", "product_id"),
        # The listing mirror reads a page of a connection's listings by the marketplace's ids (migration 0018).
        Index("ix_listings_marketplace_listing", "marketplace_id", "listing_id"),
        # An account's listings, and those of given products (migration 0020: SQLite plans without statistics, and
        # with the account's column alone indexed it read every listing of the account to find a product's).
        Index("ix_listings_account_product", "account_id", "product_id"),
        # The app's home page counts an account's Rejected listings, and those waiting for their fill-ins: a change
        # held in app_fields["Held"], which few listings have (migration 0036).
        Index("ix_listings_account_status", "account_id", "status"),
        Index(
            # A listing with a change held for its fill-ins, as each backend says it; catalog/statements.py's
            # LISTING_HELD_* repeat it word for word so that the planner takes the index (migration 0036).
            "ix_listings_account_held",
            "account_id",
            sqlite_where=text("json_extract(app_fields, '$.Held') IS NOT NULL"),
            postgresql_where=text("(app_fields ->> 'Held') IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    product_id: Mapped[str] = mapped_column(ID, ForeignKey("products.id", ondelete="CASCADE"))
    marketplace_id: Mapped[str] = mapped_column(ID, ForeignKey("marketplace_connections.id", ondelete="CASCADE"))
    # The marketplace's own ids, known once the listing exists there.
    listing_id: Mapped[str | None] = mapped_column(String(100))
    external_sku: Mapped[str | None] = mapped_column(String(200))
    listing_url: Mapped[str | None] = mapped_column(String(500))
    category_id: Mapped[str | None] = mapped_column(String(40))
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Draft | Pending | Live | Rejected
    status: Mapped[str] = mapped_column(String(16), default="Draft")
    # Values as the marketplace holds them (mirror), for drift and feeds.
    marketplace_price: Mapped[Decimal | None]
    marketplace_quantity: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    # Catalog (migration 0005): the schema version the attributes were validated against, the publish
    # job (journey) that must still report on this listing, and the marketplace's last rejection text.
    product_type_view_id: Mapped[str | None] = mapped_column(String(26))
    journey_id: Mapped[str | None] = mapped_column(String(26))
    last_error: Mapped[str | None] = mapped_column(Text)
    # What the API cannot carry, filled in the app (migration 0012): {"Images": [url, ...], "BusinessPolicy":
    # {"Payment": id, "Return": id, "Shipping": id}, "Attributes": {code: value}} (app-managed attributes).
    app_fields: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class DataFlow(Base):
    """Data Flow (spec section 1): per account and data kind, who owns the value.

    Kind is Price or Stock; Owner is Merchant (the merchant's own system) or Marketplace. No row means
    the merchant never set it, which reads as Marketplace (docs/decisions/0021-data-flow-default.md).
    """

    __tablename__ = "data_flows"

    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    owner: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[datetime]


class InventoryImport(Base):
    """A price/stock file uploaded in the app (migration 0013): kept in the database so that any worker, on any
    host, runs it; its report grows batch by batch in the transaction that applies the batch."""

    __tablename__ = "inventory_imports"
    __table_args__ = (Index("ix_inventory_imports_account_created", "account_id", "created_at"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    job_id: Mapped[str] = mapped_column(ID)
    file_name: Mapped[str] = mapped_column(String(255))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    propagate: Mapped[bool] = mapped_column(Boolean)
    # The last file line applied and the report so far (`ImportReport.view()`), committed with each batch.
    last_line: Mapped[int] = mapped_column(Integer, default=0)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_by: Mapped[str | None] = mapped_column(String(320))
    created_at: Mapped[datetime]
