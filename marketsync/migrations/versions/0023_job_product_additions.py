"""Products added to a queued PriceStockPush, one row per push (docs/decisions/0304-job-product-additions.md).

A push whose connection already has a PriceStockPush queued adds its products to that job. It used to rewrite the
job's payload with every product already queued: back to back with the workers behind, 10,000-58,000 ids read,
parsed and written again per connection per push, 10-40 ms of the push. A row per push costs the push only its own
products. Jobs queued before this migration keep their products in their payload, which the job still reads.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_product_additions",
        sa.Column("job_id", sa.String(length=26), nullable=False),
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("product_ids", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_job_product_additions_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", "id", name=op.f("pk_job_product_additions")),
    )


def downgrade() -> None:
    # Folded back into their jobs' payloads first: a job still queued must not lose a product.
    bind = op.get_bind()
    added: dict[str, list[str]] = {}
    for job_id, product_ids in bind.execute(
        sa.text("SELECT job_id, product_ids FROM job_product_additions ORDER BY job_id, id")
    ):
        added.setdefault(job_id, []).extend(json.loads(product_ids) if isinstance(product_ids, str) else product_ids)
    for job_id, product_ids in added.items():
        stored = bind.execute(sa.text("SELECT payload FROM jobs WHERE id = :id"), {"id": job_id}).scalar_one()
        payload = json.loads(stored) if isinstance(stored, str) else dict(stored)
        payload["ProductIds"] = list(dict.fromkeys([*payload.get("ProductIds", []), *product_ids]))
        bind.execute(
            sa.text("UPDATE jobs SET payload = :payload WHERE id = :id"), {"payload": json.dumps(payload), "id": job_id}
        )
    op.drop_table("job_product_additions")
