"""This domain's part of `marketsync demo` (idempotent).

Webhooks seed nothing: a subscription needs an https URL on a publicly reachable host that the integrator
owns (a demo cannot invent one that would pass the SSRF guard), and its secret is shown only once, to the
caller of `POST /api/webhooks/Create`. Events the demo's other domains record stay in the outbox and are
fanned out to whatever subscriptions exist when the workers run; with none, they are simply dispatched.
"""

from __future__ import annotations

from collections.abc import Sequence

from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime


async def seed(rt: Runtime, account_id: str, connections: Sequence[MarketplaceConnection]) -> None:
    return None
