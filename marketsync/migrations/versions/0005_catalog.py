"""catalog: taxonomies per marketplace kind (imports, categories, product type views) and the
catalog's columns on listings.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "taxonomy_imports",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("platform", sa.String(length=8), nullable=False),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("category_count", sa.Integer(), nullable=False),
        sa.Column("leaf_count", sa.Integer(), nullable=False),
        sa.Column("added_count", sa.Integer(), nullable=False),
        sa.Column("changed_count", sa.Integer(), nullable=False),
        sa.Column("removed_count", sa.Integer(), nullable=False),
        sa.Column("imported_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_taxonomy_imports")),
    )
    with op.batch_alter_table("taxonomy_imports", schema=None) as batch_op:
        batch_op.create_index("ix_taxonomy_imports_platform_sequence", ["platform", "sequence"], unique=True)

    op.create_table(
        "taxonomy_categories",
        sa.Column("platform", sa.String(length=8), nullable=False),
        sa.Column("category_id", sa.String(length=40), nullable=False),
        sa.Column("parent_id", sa.String(length=40), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("name_lower", sa.String(length=200), nullable=False),
        sa.Column("path", sa.String(length=2000), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("is_leaf", sa.Boolean(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("view_id", sa.String(length=26), nullable=True),
        sa.PrimaryKeyConstraint("platform", "category_id", name=op.f("pk_taxonomy_categories")),
    )
    with op.batch_alter_table("taxonomy_categories", schema=None) as batch_op:
        batch_op.create_index(
            "ix_taxonomy_categories_walk",
            ["platform", "is_leaf", "position", "name_lower", "category_id"],
            unique=False,
        )
        batch_op.create_index("ix_taxonomy_categories_name", ["platform", "name_lower"], unique=False)

    op.create_table(
        "product_type_views",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("platform", sa.String(length=8), nullable=False),
        sa.Column("category_id", sa.String(length=40), nullable=False),
        sa.Column("category_path", sa.String(length=2000), nullable=False),
        sa.Column("product_type_code", sa.String(length=200), nullable=False),
        sa.Column("schema_version", sa.String(length=40), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("attributes", sa.LargeBinary(), nullable=False),
        sa.Column("off_api_requirements", sa.JSON(), nullable=False),
        sa.Column("is_current", sa.Boolean(), nullable=False),
        sa.Column("import_id", sa.String(length=26), nullable=False),
        sa.Column("created_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_product_type_views")),
    )
    with op.batch_alter_table("product_type_views", schema=None) as batch_op:
        batch_op.create_index(
            "ix_product_type_views_category", ["platform", "category_id", "is_current"], unique=False
        )

    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("product_type_view_id", sa.String(length=26), nullable=True))
        batch_op.add_column(sa.Column("journey_id", sa.String(length=26), nullable=True))
        batch_op.add_column(sa.Column("last_error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.drop_column("last_error")
        batch_op.drop_column("journey_id")
        batch_op.drop_column("product_type_view_id")
    with op.batch_alter_table("product_type_views", schema=None) as batch_op:
        batch_op.drop_index("ix_product_type_views_category")
    op.drop_table("product_type_views")
    with op.batch_alter_table("taxonomy_categories", schema=None) as batch_op:
        batch_op.drop_index("ix_taxonomy_categories_name")
        batch_op.drop_index("ix_taxonomy_categories_walk")
    op.drop_table("taxonomy_categories")
    with op.batch_alter_table("taxonomy_imports", schema=None) as batch_op:
        batch_op.drop_index("ix_taxonomy_imports_platform_sequence")
    op.drop_table("taxonomy_imports")
