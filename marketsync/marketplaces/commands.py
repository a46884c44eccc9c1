"""admin marketplace connect|pause|resume|disconnect (the `sandbox` commands: marketplaces/sandbox/commands.py)."""

from __future__ import annotations

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.auth import service as auth_service
from marketsync.catalog.taxonomy import service as taxonomy
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.kinds import kind_of, platform_named
from marketsync.kit.cli import JsonOption, emit, marketplace_app
from marketsync.marketplaces import service
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from marketsync.startup import run_command

AccountOption = typer.Option(..., "--account", help="Account id.")
MarketplaceOption = typer.Option(..., "--marketplace", help="Marketplace connection id (MarketplaceId).")


@marketplace_app.command("connect")
def connect(
    account: str = AccountOption,
    platform: str = typer.Option(..., "--platform", help="P1, P2, P3, P4 or Amazon."),
    country: str = typer.Option(..., "--country", help="Two letters, e.g. UK."),
    authorization_code: str | None = typer.Option(
        None, "--authorization-code", help="Amazon: the spapi_oauth_code of Amazon's consent redirect."
    ),
    selling_partner_id: str | None = typer.Option(
        None, "--selling-partner-id", help="Amazon: the selling_partner_id of the same redirect."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Connect a marketplace (stands for authorising it in the app). A real marketplace (Amazon) takes the answer of
    its consent redirect: the one-time code is exchanged at the marketplace, its refresh token stored encrypted and
    never shown; connecting a site again reauthorises it."""

    async def body(rt: Runtime) -> dict[str, object]:
        named = platform_named(platform)
        if authorization_code is not None or selling_partner_id is not None or (named and not kind_of(named).sandbox):
            return await _connect_with_consent(rt, named)
        async with rt.db.transaction() as session:
            connection = await service.connect(rt, session, account, platform, country)
            loading = await taxonomy.load_categories_if_missing(rt, session, connection)
        connected: dict[str, object] = {
            "MarketplaceId": connection.id, "Platform": connection.platform, "Country": connection.country,
        }  # fmt: skip
        if loading is not None:  # the site had no category tree: a worker loads it
            connected["CategoriesJobId"] = loading
        return connected

    async def _connect_with_consent(rt: Runtime, named: str | None) -> dict[str, object]:
        problems: dict[str, list[str]] = {}
        if named is None or kind_of(named).sandbox:
            problems["Platform"] = ["--authorization-code and --selling-partner-id are Amazon's: --platform Amazon."]
        if not authorization_code:
            problems["AuthorizationCode"] = ["Required for Amazon: the spapi_oauth_code of Amazon's consent redirect."]
        if not selling_partner_id:
            problems["SellingPartnerId"] = ["Required for Amazon: the selling_partner_id of the same redirect."]
        if problems:
            raise ValidationFailed(errors=problems)
        assert authorization_code is not None and selling_partner_id is not None
        async with rt.db.read() as session:  # an unknown account is refused before the one-time code is spent
            if await auth_service.find_account(session, account) is None:
                raise NotFound("No account with this id.")
        # What the consent redirect carried, as the app's callback receives it.
        answer = {"spapi_oauth_code": authorization_code, "selling_partner_id": selling_partner_id}
        queued: list[str] = []

        async def load_categories(rt: Runtime, session: AsyncSession, connection: MarketplaceConnection) -> None:
            job_id = await taxonomy.load_categories_if_missing(rt, session, connection)
            queued.extend([job_id] if job_id else [])

        connection, existed, _ = await service.connect_authorised(
            rt, account, platform, country, answer, when_authorised=load_categories
        )
        connected: dict[str, object] = {
            "MarketplaceId": connection.id,
            "Platform": connection.platform,
            "Country": connection.country,
            "SellingPartnerId": connection.seller_id,
            "Reauthorised": existed,
            "HealthStatus": connection.health_status,
        }
        if queued:  # the site had no category tree: a worker loads it
            connected["CategoriesJobId"] = queued[0]
        return connected

    emit(run_command(body, as_json=as_json), as_json)


@marketplace_app.command("pause")
def pause(account: str = AccountOption, marketplace: str = MarketplaceOption, as_json: bool = JsonOption) -> None:
    """Pause: neither pulled nor pushed, omitted from GET /api/marketplaces; queued work is cancelled."""

    async def body(rt: Runtime) -> dict[str, object]:
        async with rt.db.transaction() as session:
            await service.pause(rt, session, account, marketplace)
        return {"MarketplaceId": marketplace, "State": service.PAUSED}

    emit(run_command(body, as_json=as_json), as_json)


@marketplace_app.command("resume")
def resume(account: str = AccountOption, marketplace: str = MarketplaceOption, as_json: bool = JsonOption) -> None:
    """Resume a paused connection; one full price/stock resync (and an order pull) is queued."""

    async def body(rt: Runtime) -> dict[str, object]:
        async with rt.db.transaction() as session:
            job_ids = await service.resume(rt, session, account, marketplace)
        return {"MarketplaceId": marketplace, "State": service.ACTIVE, "JobIds": job_ids}

    emit(run_command(body, as_json=as_json), as_json)


@marketplace_app.command("disconnect")
def disconnect(account: str = AccountOption, marketplace: str = MarketplaceOption, as_json: bool = JsonOption) -> None:
    """Disconnect: the connection and its listings are removed; its queued jobs are cancelled."""

    async def body(rt: Runtime) -> dict[str, object]:
        async with rt.db.transaction() as session:
            cancelled = await service.disconnect(rt, session, account, marketplace)
        return {"MarketplaceId": marketplace, "Disconnected": True, "CancelledJobs": cancelled}

    emit(run_command(body, as_json=as_json), as_json)
