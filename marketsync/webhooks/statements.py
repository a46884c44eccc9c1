"""The webhook worker's hand-written statements, both dialects (docs/decisions/0445): the claim and the recording of
results, its hot path on the raw driver inside the session's transaction (db.SessionDriver), a fixed number of
statements per batch whatever its size."""

from __future__ import annotations

from marketsync.db.statements import Statement

_CLAIM_COLUMNS = (
    "d.id, d.account_id, d.subscription_id, d.event_id, d.event_type, d.attempts, d.lease_owner, "
    "s.url, s.secret_encrypted, e.body, d.resent, e.is_test"
)
_CLAIM_FROM = (
    "FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id "
    "JOIN events e ON e.id = d.event_id "
)
# At most repository.PER_SUBSCRIPTION_CLAIMS (parameter 2, the cap) deliveries of one subscription are leased at a
# time, across workers: a slow receiver holds that many slots, never all of them (docs/decisions/0317). What a claim
# reads does not grow with the due backlog (docs/decisions/0322): the live leases are counted from the lease index
# (leased rows only: at most workers x slots), and each active subscription below its cap gives its first cap due,
# unleased deliveries from its own index (subscription_id, status, next_attempt_at, id), which stops there; a window
# over those few numbers them after the subscription's live leases, and a delivery within the cap may be claimed. On
# PostgreSQL the window is in a subquery (FOR UPDATE does not go with window functions); two workers claiming at once
# pick the same rows, and SKIP LOCKED and the re-checked lease keep them from both taking one.


def _pending_subscriptions(postgres: bool) -> str:
    """`pending`: the subscriptions with Pending deliveries, one seek each in their partial index (a skip scan):
    the claim looks at these, not at every active subscription (docs/decisions/0322). Opens the statement."""
    rows = (
        "webhook_deliveries p"
        if postgres
        else "webhook_deliveries p INDEXED BY ix_webhook_deliveries_pending_subscription"
    )
    return (
        f"WITH RECURSIVE pending(id) AS (SELECT MIN(p.subscription_id) FROM {rows} WHERE p.status = 'Pending' "  # noqa: S608
        f"UNION ALL SELECT (SELECT MIN(p.subscription_id) FROM {rows} "
        "WHERE p.status = 'Pending' AND p.subscription_id > pending.id) FROM pending WHERE pending.id IS NOT NULL) "
    )


def _claimable_ids(postgres: bool) -> str:
    """The ids a claim may lease: parameter 1 is now, parameter 2 the cap (only the placeholders are interpolated).

    Every read is driven from `pending` (the subscriptions with Pending deliveries), whatever the planner estimates:
    the subscription's state is a scalar subquery (one primary-key probe a pending subscription, never a join the
    planner may turn into a scan of every subscription) and its first due deliveries a lateral list (docs/decisions/
    0325)."""
    now, cap = ("$1", "$2") if postgres else ("?1", "?2")
    # SQLite, without statistics, would rather read the due index (status, next_attempt_at): the whole backlog.
    leased_rows = "webhook_deliveries l" if postgres else "webhook_deliveries l INDEXED BY ix_webhook_deliveries_leased"
    live_leases = (
        f"SELECT l.subscription_id, COUNT(*) AS held FROM {leased_rows} "  # noqa: S608
        f"WHERE l.lease_expires_at >= {now} AND l.status = 'Pending' AND l.next_attempt_at <= {now} "
        "GROUP BY l.subscription_id"
    )
    due_of_the_subscription = (
        f"w.subscription_id = pending.id AND w.status = 'Pending' AND w.next_attempt_at <= {now} "
        f"AND (w.lease_expires_at IS NULL OR w.lease_expires_at < {now}) ORDER BY w.next_attempt_at, w.id LIMIT {cap}"
    )
    if postgres:
        first_due = (
            "CROSS JOIN LATERAL (SELECT w.id, w.next_attempt_at FROM webhook_deliveries w "  # noqa: S608
            f"WHERE {due_of_the_subscription}) c"
        )
    else:  # no LATERAL: the subscription's first due ids are a correlated IN list, each looked up by primary key
        first_due = (
            "JOIN webhook_deliveries c ON c.id IN (SELECT w.id FROM webhook_deliveries w "  # noqa: S608
            f"WHERE {due_of_the_subscription})"
        )
    is_active = "(SELECT s.is_active FROM webhook_subscriptions s WHERE s.id = pending.id)"  # NULL once deleted
    active = is_active if postgres else f"{is_active} = 1"
    return (
        "SELECT q.id FROM (SELECT c.id, COALESCE(h.held, 0) + "  # noqa: S608
        "ROW_NUMBER() OVER (PARTITION BY pending.id ORDER BY c.next_attempt_at, c.id) AS place "
        f"FROM pending LEFT JOIN ({live_leases}) h ON h.subscription_id = pending.id {first_due} "
        f"WHERE {active} AND COALESCE(h.held, 0) < {cap}) q WHERE q.place <= {cap}"
    )


# The due deliveries a claim leases (parameters: now, the cap, the batch's size), with everything an attempt needs;
# locked, SKIP LOCKED on PostgreSQL (SQLite's writer transaction already excludes other claimers).
CLAIM_DUE = Statement(
    "webhooks.claim_due",
    sqlite=(
        f"{_pending_subscriptions(postgres=False)}SELECT {_CLAIM_COLUMNS} {_CLAIM_FROM}"
        f"WHERE d.id IN ({_claimable_ids(postgres=False)}) AND s.is_active = 1 "
        "ORDER BY d.next_attempt_at, d.id LIMIT ?3"
    ),
    postgresql=(
        # ARRAY(...) is computed once and probes the primary key: an IN would let the planner hash-join it against a
        # scan of every Pending delivery.
        f"{_pending_subscriptions(postgres=True)}SELECT {_CLAIM_COLUMNS} {_CLAIM_FROM}"
        f"WHERE d.id = ANY(ARRAY({_claimable_ids(postgres=True)})) "
        # The row's own due test again: re-checked on a row another worker leased since this statement's snapshot.
        "AND d.status = 'Pending' AND (d.lease_expires_at IS NULL OR d.lease_expires_at < $1) "
        "AND s.is_active ORDER BY d.next_attempt_at, d.id LIMIT $3 FOR UPDATE OF d SKIP LOCKED"
    ),
)

# Whether a claim would lease anything (parameters: now, the cap): a read-only look before taking SQLite's writer.
ANY_CLAIMABLE = Statement(
    "webhooks.any_claimable",
    sqlite=f"{_pending_subscriptions(postgres=False)}SELECT 1 WHERE EXISTS ({_claimable_ids(postgres=False)})",
    postgresql=f"{_pending_subscriptions(postgres=True)}SELECT 1 WHERE EXISTS ({_claimable_ids(postgres=True)})",
)

# The lease on exactly the rows a claim read (parameters: worker, lease expiry, the ids).
LEASE = Statement(
    "webhooks.lease",
    sqlite=(
        "UPDATE webhook_deliveries SET lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1 "
        "WHERE id IN ({marks})"
    ),
    postgresql=(
        "UPDATE webhook_deliveries SET lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1 "
        "WHERE id = ANY($3::varchar[])"
    ),
)

# Claimed deliveries handed back unsent (parameters: the ids, the worker): the lease cleared and the attempt number
# the claim gave them taken back, where the row is still this worker's to hand back.
_HAND_BACK = "UPDATE webhook_deliveries SET lease_owner = NULL, lease_expires_at = NULL, attempts = attempts - 1 "
# Never attempted (a worker stopping): still leased to this worker and Pending.
HAND_BACK_UNSTARTED = Statement(
    "webhooks.hand_back_unstarted",
    sqlite=f"{_HAND_BACK}WHERE id IN ({{marks}}) AND lease_owner = ? AND status = 'Pending'",
    postgresql=f"{_HAND_BACK}WHERE id = ANY($1::varchar[]) AND lease_owner = $2 AND status = 'Pending'",
)
# Not sent because the subscription was deleted or disabled meanwhile: unless leased to another worker since.
HAND_BACK_DROPPED = Statement(
    "webhooks.hand_back_dropped",
    sqlite=f"{_HAND_BACK}WHERE id IN ({{marks}}) AND (lease_owner IS NULL OR lease_owner = ?)",
    postgresql=f"{_HAND_BACK}WHERE id = ANY($1::varchar[]) AND (lease_owner IS NULL OR lease_owner = $2)",
)

# The deliveries this worker still holds moved to their new state after an attempt, the lease released (parameters:
# the rows (id, status, next attempt, finished), then the worker); the ids of those moved.
FINISH_HELD = Statement(
    "webhooks.finish_held",
    sqlite=(
        "WITH u(id, status, next_at, finished_at) AS (VALUES {marks}) "
        "UPDATE webhook_deliveries SET status = u.status, next_attempt_at = u.next_at, finished_at = u.finished_at, "
        "lease_owner = NULL, lease_expires_at = NULL FROM u WHERE webhook_deliveries.id = u.id "
        "AND webhook_deliveries.lease_owner = ? AND webhook_deliveries.status = 'Pending' "
        "RETURNING webhook_deliveries.id"
    ),
    postgresql=(
        "UPDATE webhook_deliveries AS d SET status = u.status, next_attempt_at = u.next_at, "
        "finished_at = u.finished_at, lease_owner = NULL, lease_expires_at = NULL "
        "FROM unnest($1::varchar[], $2::varchar[], $3::timestamp[], $4::timestamp[]) "
        "AS u(id, status, next_at, finished_at) "
        "WHERE d.id = u.id AND d.lease_owner = $5 AND d.status = 'Pending' RETURNING d.id"
    ),
    sqlite_item="(?,?,?,?)",
)

_ATTEMPT_COLUMNS = (
    "id, account_id, subscription_id, delivery_id, event_id, event_type, attempt, started_at, duration_ms, "
    "status_code, outcome, error_class, error_detail, response_snippet, next_attempt_at"
)
# The attempt log's lines of a batch: SQLite one row a run (executemany), PostgreSQL every row over unnest'ed arrays.
# Only this module's column names are interpolated; every value is a bound parameter.
INSERT_ATTEMPTS = Statement(
    "webhooks.insert_attempts",
    sqlite=f"INSERT INTO webhook_attempts ({_ATTEMPT_COLUMNS}) VALUES ({','.join('?' * 15)})",  # noqa: S608
    postgresql=(
        f"INSERT INTO webhook_attempts ({_ATTEMPT_COLUMNS}) SELECT * FROM unnest("  # noqa: S608
        "$1::varchar[], $2::varchar[], $3::varchar[], $4::varchar[], $5::varchar[], $6::varchar[], $7::integer[], "
        "$8::timestamp[], $9::integer[], $10::integer[], $11::varchar[], $12::varchar[], $13::varchar[], $14::text[], "
        "$15::timestamp[])"
    ),
)

# A delivery succeeded for each of these active subscriptions (parameters: now, the ids): ConsecutiveFailures to 0.
SUBSCRIPTIONS_SUCCEEDED = Statement(
    "webhooks.subscriptions_succeeded",
    sqlite=(
        "UPDATE webhook_subscriptions SET consecutive_failures = 0, last_success_at = ? "
        "WHERE id IN ({marks}) AND is_active = 1"
    ),
    postgresql=(
        "UPDATE webhook_subscriptions SET consecutive_failures = 0, last_success_at = $1 "
        "WHERE id = ANY($2::varchar[]) AND is_active"
    ),
)

# An event, as outbox.record_event writes it through the ORM: dispatched already (at its occurred_at) when the account
# has no active subscription, decided by the INSERT itself (docs/decisions/0455). The push's hot path writes its
# InventoryChanged with it on the raw driver (docs/decisions/0462). It answers the event's dispatched_at (NULL: left for
# the fan-out), so the workers are woken only then. Not `RETURNING dispatched_at IS NULL`: SQLite 3.40 answers that 0
# for the NULL this CASE wrote.
INSERT_EVENT = Statement(
    "webhooks.insert_event",
    sqlite=(
        "INSERT INTO events (id, account_id, type, body, occurred_at, dispatched_at, is_test) VALUES (?1, ?2, ?3, ?4, "
        "?5, CASE WHEN EXISTS (SELECT 1 FROM webhook_subscriptions WHERE account_id = ?2 AND is_active = 1) "
        "THEN NULL ELSE ?5 END, 0) RETURNING dispatched_at"
    ),
    postgresql=(
        "INSERT INTO events (id, account_id, type, body, occurred_at, dispatched_at, is_test) VALUES ($1, $2::varchar, "
        "$3, $4, $5::timestamp, CASE WHEN EXISTS (SELECT 1 FROM webhook_subscriptions WHERE account_id = $2::varchar "
        "AND is_active) THEN NULL ELSE $5::timestamp END, false) RETURNING dispatched_at"
    ),
)
