"""The jobs' hand-written statements, both dialects (docs/decisions/0445): the price/stock push's enqueue on the raw
driver (docs/decisions/0260). Payloads are JSON text (SQLite stores it so; PostgreSQL casts it to json)."""

from __future__ import annotations

from marketsync.db.statements import Statement

# A connection's queued jobs of a type that never ran, with their total and the products pushes added to each: the
# additions' JSON arrays as stored, joined by commas (NULL when none; parsed once, and only when needed). Locked on
# PostgreSQL until the push commits, in one order.
QUEUED_NEVER_STARTED = Statement(
    "jobs.queued_never_started",
    sqlite=(
        "SELECT id, marketplace_id, payload, progress_total, (SELECT group_concat(a.product_ids, ',') "
        "FROM job_product_additions a WHERE a.job_id = jobs.id) FROM jobs WHERE account_id = ? "
        "AND marketplace_id IN ({marks}) AND type = ? AND status = ? AND started_at IS NULL ORDER BY run_after, id"
    ),
    postgresql=(
        "SELECT id, marketplace_id, payload, progress_total, (SELECT string_agg(a.product_ids::text, ',') "
        "FROM job_product_additions a WHERE a.job_id = jobs.id) FROM jobs "
        "WHERE account_id = $1 AND marketplace_id = ANY($2::varchar[]) AND type = $3 AND status = $4 "
        "AND started_at IS NULL ORDER BY run_after, id FOR UPDATE"
    ),
)

# The products a push adds, counted on the job if it is still queued and never ran. SQLite: one job a run.
COUNT_ADDITIONS = Statement(
    "jobs.count_additions",
    sqlite=(
        "UPDATE jobs SET progress_total = progress_total + ?, progress_done = 0, updated_at = ? "
        "WHERE id = ? AND status = 'Published' AND started_at IS NULL RETURNING id"
    ),
    postgresql=(
        "UPDATE jobs AS j SET progress_total = j.progress_total + v.added, progress_done = 0, updated_at = $3 "
        "FROM unnest($1::varchar[], $2::integer[]) AS v(id, added) "
        "WHERE j.id = v.id AND j.status = 'Published' AND j.started_at IS NULL RETURNING j.id"
    ),
)

# A queued job's payload replaced and its total set, if it is still queued and never ran (a create joining a held
# ListingPublish: docs/decisions/0460).
REPLACE_QUEUED_PAYLOAD = Statement(
    "jobs.replace_queued_payload",
    sqlite=(
        "UPDATE jobs SET payload = ?, progress_total = ?, progress_done = 0, updated_at = ? "
        "WHERE id = ? AND status = 'Published' AND started_at IS NULL RETURNING id"
    ),
    postgresql=(
        "UPDATE jobs SET payload = $1::json, progress_total = $2, progress_done = 0, updated_at = $3 "
        "WHERE id = $4 AND status = 'Published' AND started_at IS NULL RETURNING id"
    ),
)

# SQLite: one row a run (executemany); PostgreSQL: every row over unnest'ed arrays.
INSERT_ADDITIONS = Statement(
    "jobs.insert_additions",
    sqlite="INSERT INTO job_product_additions (job_id, id, product_ids) VALUES (?, ?, ?)",
    postgresql=(
        "INSERT INTO job_product_additions (job_id, id, product_ids) "
        "SELECT v.job_id, v.id, v.product_ids::json FROM unnest($1::varchar[], $2::varchar[], $3::text[]) "
        "AS v(job_id, id, product_ids)"
    ),
)

_INSERT_COLUMNS = (
    "id, account_id, type, marketplace_id, status, payload, progress_done, progress_total, recovery_count, "
    "run_after, created_at, updated_at"
)
# Jobs queued, runnable from run_after. SQLite: one row a run (executemany); PostgreSQL: every row over unnest'ed
# arrays.
INSERT_QUEUED = Statement(
    "jobs.insert_queued",
    sqlite=f"INSERT INTO jobs ({_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 0, ?, 0, ?, ?, ?)",  # noqa: S608
    postgresql=(
        f"INSERT INTO jobs ({_INSERT_COLUMNS}) "  # noqa: S608
        "SELECT v.id, $4, $5, v.marketplace_id, $6, v.payload::json, 0, v.total, 0, $9, $7, $7 "
        "FROM unnest($1::varchar[], $2::varchar[], $3::text[], $8::integer[]) AS v(id, marketplace_id, payload, total)"
    ),
)
