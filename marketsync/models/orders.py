"""Tables of the orders domain: orders, their items, shipments, refunds, and the write-back feeds.

Orders keep `marketplace_id`, `platform` and `country` as plain columns (no foreign key): an order is a
financial record and outlives a disconnected marketplace connection.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, SmallInteger, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base


class Order(Base):
    __tablename__ = "orders"
    __table_args__ = (
        UniqueConstraint("account_id", "marketplace_id", "marketplace_order_id", name="uq_orders_marketplace_order"),
        # Keyset paging of POST /api/orders/List: (updated_at, id) within one account.
        Index("ix_orders_account_updated", "account_id", "updated_at", "id"),
        Index("ix_orders_account_status_updated", "account_id", "status", "updated_at", "id"),
        # Finds orders whose stored document is missing or older than the renderer (orders.documents schedule).
        Index("ix_orders_document_version", "document_version"),
        # The app finds an order by the marketplace's order id across the account's marketplaces (migration 0026).
        Index("ix_orders_account_marketplace_order", "account_id", "marketplace_order_id"),
        # The app's home page counts the orders unshipped for more than a day (migration 0036).
        Index("ix_orders_account_status_purchased", "account_id", "status", "purchase_date"),
        # The app's orders page: sorted by purchase date, filtered by marketplace, searched by the customer's name
        # (migration 0038, docs/decisions/0436-app-tables.md).
        Index("ix_orders_account_purchase", "account_id", "purchase_date", "id"),
        Index("ix_orders_account_marketplace_updated", "account_id", "marketplace_id", "updated_at", "id"),
        Index("ix_orders_buyer_name_lower", text("lower(buyer_name)"), "account_id"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    marketplace_id: Mapped[str] = mapped_column(ID)
    platform: Mapped[str] = mapped_column(String(8))
    country: Mapped[str] = mapped_column(String(8))
    marketplace_order_id: Mapped[str] = mapped_column(String(100))
    # Our status (rules.ORDER_STATUSES), derived from the items after every change.
    status: Mapped[str] = mapped_column(String(24))
    # The marketplace's own status as last pulled.
    marketplace_status: Mapped[str] = mapped_column(String(40))
    purchase_date: Mapped[datetime]
    marketplace_changed_at: Mapped[datetime]
    currency: Mapped[str] = mapped_column(String(3))
    items_total: Mapped[Decimal]
    shipping_total: Mapped[Decimal]
    tax_total: Mapped[Decimal]
    refunded_total: Mapped[Decimal]
    external_reference: Mapped[str | None] = mapped_column(String(200))
    # Personal data: only serialised with IncludeCustomerData, never logged.
    buyer_name: Mapped[str] = mapped_column(String(200))
    buyer_email: Mapped[str | None] = mapped_column(String(320))
    buyer_phone: Mapped[str | None] = mapped_column(String(50))
    ship_name: Mapped[str] = mapped_column(String(200))
    ship_line1: Mapped[str] = mapped_column(String(200))
    ship_line2: Mapped[str | None] = mapped_column(String(200))
    ship_city: Mapped[str] = mapped_column(String(100))
    ship_region: Mapped[str | None] = mapped_column(String(100))
    ship_postal_code: Mapped[str] = mapped_column(String(20))
    ship_country_code: Mapped[str] = mapped_column(String(8))
    ship_phone: Mapped[str | None] = mapped_column(String(50))
    created_at: Mapped[datetime]
    # The last-changed time: moved by every change (pull, confirm, cancel, refund, update).
    updated_at: Mapped[datetime]
    # The order as the API sends it, stored by every change (docs/decisions/0066-order-documents.md):
    # `document` without the customer block, `customer_document` the block alone (personal data), both
    # JSON bytes; `document_version` the renderer that wrote them (schemas.DOCUMENT_VERSION; 0: none yet). Written and
    # read with SQL only, never through the entity.
    document: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True, deferred_raiseload=True)
    customer_document: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True, deferred_raiseload=True)
    document_version: Mapped[int] = mapped_column(
        SmallInteger, server_default="0", deferred=True, deferred_raiseload=True
    )
    # The updated_at the document was rendered at: it is current only while this equals updated_at.
    document_updated_at: Mapped[datetime | None] = mapped_column(deferred=True, deferred_raiseload=True)


class OrderItem(Base):
    __tablename__ = "order_items"
    __table_args__ = (
        UniqueConstraint("order_id", "marketplace_item_id", name="uq_order_items_marketplace_item"),
        Index("ix_order_items_order", "order_id", "position"),
        # The app's orders page finds the orders holding a SKU, letter case ignored (migration 0038).
        Index("ix_order_items_sku_lower", text("lower(sku)"), "account_id"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    order_id: Mapped[str] = mapped_column(ID, ForeignKey("orders.id", ondelete="CASCADE"))
    account_id: Mapped[str] = mapped_column(ID)
    position: Mapped[int] = mapped_column(Integer)
    marketplace_item_id: Mapped[str] = mapped_column(String(100))
    sku: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(String(500))
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price: Mapped[Decimal]
    status: Mapped[str] = mapped_column(String(24))
    marketplace_status: Mapped[str] = mapped_column(String(40))
    shipped_quantity: Mapped[int] = mapped_column(Integer, default=0)
    cancelled_quantity: Mapped[int] = mapped_column(Integer, default=0)
    refunded_quantity: Mapped[int] = mapped_column(Integer, default=0)
    refunded_amount: Mapped[Decimal]
    cancel_reason: Mapped[str | None] = mapped_column(String(40))


class OrderShipment(Base):
    __tablename__ = "order_shipments"
    __table_args__ = (Index("ix_order_shipments_order", "order_id", "created_at"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    order_id: Mapped[str] = mapped_column(ID, ForeignKey("orders.id", ondelete="CASCADE"))
    order_item_id: Mapped[str] = mapped_column(ID, ForeignKey("order_items.id", ondelete="CASCADE"))
    quantity: Mapped[int] = mapped_column(Integer)
    ship_date: Mapped[datetime]
    carrier_code: Mapped[str | None] = mapped_column(String(40))
    carrier_name: Mapped[str | None] = mapped_column(String(100))
    service_level: Mapped[str | None] = mapped_column(String(60))
    tracking_number: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime]


class OrderRefundLine(Base):
    """One item's share of a refund; lines with the same refund_id form one refund."""

    __tablename__ = "order_refund_lines"
    __table_args__ = (Index("ix_order_refund_lines_order", "order_id", "created_at"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    refund_id: Mapped[str] = mapped_column(ID)
    order_id: Mapped[str] = mapped_column(ID, ForeignKey("orders.id", ondelete="CASCADE"))
    order_item_id: Mapped[str] = mapped_column(ID, ForeignKey("order_items.id", ondelete="CASCADE"))
    quantity: Mapped[int] = mapped_column(Integer)
    amount: Mapped[Decimal]
    reason: Mapped[str] = mapped_column(String(40))
    currency: Mapped[str] = mapped_column(String(3))
    created_at: Mapped[datetime]
