"""Each marketplace kind serves its own sites (countries), listed once in marketsync/kinds.py: connect takes those
and refuses any other, naming the sites the kind serves (docs/decisions/0312-kind-sites.md)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from marketsync.http.errors import ValidationFailed
from marketsync.kinds import KINDS, home_site
from marketsync.marketplaces import service
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.support.factories import make_account


async def _connections(rt: Runtime, account_id: str) -> int:
    async with rt.db.read() as session:
        query = select(func.count()).where(MarketplaceConnection.account_id == account_id)
        return int((await session.execute(query)).scalar_one())


async def test_every_site_of_every_kind_connects(rt: Runtime) -> None:
    account_id = await make_account(rt)
    async with rt.db.transaction() as session:
        for platform, kind in KINDS.items():
            assert kind.sites[0] == home_site(platform)
            for country in kind.sites:
                connection = await service.connect(rt, session, account_id, platform, country.lower())
                assert (connection.platform, connection.country) == (platform, country)
    assert await _connections(rt, account_id) == sum(len(kind.sites) for kind in KINDS.values())


@pytest.mark.parametrize("begin", [False, True], ids=["connect", "begin_connect"])
async def test_a_country_the_kind_does_not_serve_is_refused_and_nothing_is_written(rt: Runtime, begin: bool) -> None:
    account_id = await make_account(rt)
    start = service.begin_connect if begin else service.connect
    with pytest.raises(ValidationFailed) as refused:
        async with rt.db.transaction() as session:
            await start(rt, session, account_id, "P4", "UK")
    assert refused.value.errors == {"Country": ["P4 has no UK site; it serves FR, IT, ES."]}
    # Every bad field at once: an unknown kind and a malformed country; an unknown kind's country is not judged.
    with pytest.raises(ValidationFailed) as both:
        async with rt.db.transaction() as session:
            await start(rt, session, account_id, "P9", "U")
    assert set(both.value.errors) == {"Platform", "Country"}
    with pytest.raises(ValidationFailed) as platform_only:
        async with rt.db.transaction() as session:
            await start(rt, session, account_id, "P9", "UK")
    assert set(platform_only.value.errors) == {"Platform"}
    assert await _connections(rt, account_id) == 0
