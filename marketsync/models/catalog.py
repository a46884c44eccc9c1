"""Tables of the catalog domain: marketplace taxonomies, one per site (kind and country, e.g. P1 UK), shared by
every account connected to that site (docs/decisions/0221-taxonomies-per-site.md).

- `taxonomy_imports`: one row per import of a site's taxonomy (the version history).
- `taxonomy_categories`: the current tree; `name_lower` makes the case-insensitive search cheap, and
  `position` (pre-order) lets a search without text walk the tree in order.
- `product_type_views`: one row per version of a leaf's schema. The row's id is the ProductTypeViewId;
  a re-import that changes a leaf's content adds a new view and marks the old one not current, so an
  old id is recognised (and refused) rather than unknown. The attributes (with their narrowed allowed
  values, app-managed flags) and the off-API requirements are stored whole as JSON: a schema is always
  read and written as one document (docs/decisions/0080-taxonomy-storage.md).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base

CATEGORY_ID = String(40)
COUNTRY = String(8)  # as on marketplace_connections.country


class TaxonomyImport(Base):
    __tablename__ = "taxonomy_imports"
    __table_args__ = (Index("ix_taxonomy_imports_site_sequence", "platform", "country", "sequence", unique=True),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    platform: Mapped[str] = mapped_column(String(8))
    country: Mapped[str] = mapped_column(COUNTRY)
    # 1, 2, 3 ... per site: the taxonomy version that SchemaVersion values refer to.
    sequence: Mapped[int] = mapped_column(Integer)
    revision: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(200))
    # Hash of the whole taxonomy: an import of identical content is a no-op.
    content_hash: Mapped[str] = mapped_column(String(64))
    category_count: Mapped[int] = mapped_column(Integer)
    leaf_count: Mapped[int] = mapped_column(Integer)
    added_count: Mapped[int] = mapped_column(Integer)
    changed_count: Mapped[int] = mapped_column(Integer)
    removed_count: Mapped[int] = mapped_column(Integer)
    imported_at: Mapped[datetime]


class TaxonomyCategory(Base):
    __tablename__ = "taxonomy_categories"
    __table_args__ = (
        # Covering: the tree walk and the name scan read only the index, never the table.
        Index("ix_taxonomy_categories_walk", "platform", "country", "is_leaf", "position", "name_lower", "category_id"),
        Index("ix_taxonomy_categories_name", "platform", "country", "name_lower"),
    )

    platform: Mapped[str] = mapped_column(String(8), primary_key=True)
    country: Mapped[str] = mapped_column(COUNTRY, primary_key=True)
    category_id: Mapped[str] = mapped_column(CATEGORY_ID, primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(CATEGORY_ID)
    name: Mapped[str] = mapped_column(String(200))
    name_lower: Mapped[str] = mapped_column(String(200))
    path: Mapped[str] = mapped_column(String(2000))
    depth: Mapped[int] = mapped_column(Integer)
    is_leaf: Mapped[bool] = mapped_column(Boolean)
    position: Mapped[int] = mapped_column(Integer)
    # The current schema of a leaf; None for inner categories.
    view_id: Mapped[str | None] = mapped_column(ID)


class ProductTypeView(Base):
    __tablename__ = "product_type_views"
    __table_args__ = (Index("ix_product_type_views_category", "platform", "country", "category_id", "is_current"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    platform: Mapped[str] = mapped_column(String(8))
    country: Mapped[str] = mapped_column(COUNTRY)
    category_id: Mapped[str] = mapped_column(CATEGORY_ID)
    category_path: Mapped[str] = mapped_column(String(2000))
    product_type_code: Mapped[str] = mapped_column(String(200))
    schema_version: Mapped[str] = mapped_column(String(40))
    content_hash: Mapped[str] = mapped_column(String(64))
    # orjson bytes of [AttributeSpec.to_json(), ...], app-managed attributes included (ApiSettable false).
    # Stored pre-serialised: a schema is written and read whole, and orjson is ~10x the stdlib json.
    attributes: Mapped[bytes] = mapped_column(LargeBinary)
    off_api_requirements: Mapped[list[str]] = mapped_column(JSON)
    is_current: Mapped[bool] = mapped_column(Boolean)
    import_id: Mapped[str] = mapped_column(ID)
    created_at: Mapped[datetime]
