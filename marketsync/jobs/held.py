"""What each queued PriceStockPush holds, as this process's own commits left it (docs/decisions/0468).

A push adds to a connection's queued job only the products the job does not hold yet (0461), so it needs the job's
products: read from the database, they cost a push more than the rest of its propagation (thousands of ids a job,
parsed four times a push on the demo's tenant). This process knows them already when it was the last to add to the
job: it keeps, per job, the products the job held when one of its transactions that queued or extended it committed.

Kept products are used only while the job's total (`progress_total`, its products counted once each while it is
queued: 0461) equals their number. They are a subset of what the job holds (they were committed, and a queued job's
products only grow), so an equal count means the same set; another process that added to the job since changed the
total, and the push reads the products from the database as before.
"""

from __future__ import annotations

from collections import OrderedDict

from sqlalchemy.ext.asyncio import AsyncSession

# Jobs kept (one queued PriceStockPush a connection at a time), and the most products kept for one: a resync of a
# large catalogue is read from the database rather than held in the process.
MAX_JOBS = 256
MAX_PRODUCTS = 100_000


class HeldProducts:
    def __init__(self) -> None:
        self._held: OrderedDict[tuple[str, str], frozenset[str]] = OrderedDict()

    def get(self, database: str, job_id: str, total: int | None) -> frozenset[str] | None:
        """The job's products if this process knows them all (their number is the job's total), else None."""
        held = self._held.get((database, job_id))
        return held if held is not None and len(held) == total else None

    def remember(self, database: str, holds: dict[str, frozenset[str]]) -> None:
        """After the commit that left each job holding these products."""
        for job_id, products in holds.items():
            key = (database, job_id)
            if len(products) > MAX_PRODUCTS:
                self._held.pop(key, None)
                continue
            self._held[key] = products
            self._held.move_to_end(key)
        while len(self._held) > MAX_JOBS:
            self._held.popitem(last=False)


def database_of(session: AsyncSession) -> str:
    """The database a session writes to, as a key (its URL, the password hidden)."""
    return str(session.get_bind().engine.url)


# This process's.
HELD = HeldProducts()
