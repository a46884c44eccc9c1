"""admin marketplace connect|pause|resume|disconnect (the `sandbox` commands: marketplaces/sandbox/commands.py)."""

from __future__ import annotations

import typer

from marketsync.catalog import service as catalog
from marketsync.kit.cli import JsonOption, emit, marketplace_app
from marketsync.marketplaces import service
from marketsync.runtime import Runtime
from marketsync.startup import run_command

AccountOption = typer.Option(..., "--account", help="Account id.")
MarketplaceOption = typer.Option(..., "--marketplace", help="Marketplace connection id (MarketplaceId).")


@marketplace_app.command("connect")
def connect(
    account: str = AccountOption,
    platform: str = typer.Option(..., "--platform", help="P1, P2, P3 or P4."),
    country: str = typer.Option(..., "--country", help="Two letters, e.g. UK."),
    as_json: bool = JsonOption,
) -> None:
    """Connect a marketplace (stands for authorising it in the app)."""

    async def body(rt: Runtime) -> dict[str, object]:
        async with rt.db.transaction() as session:
            connection = await service.connect(rt, session, account, platform, country)
            loading = await catalog.load_categories_if_missing(rt, session, connection)
        connected: dict[str, object] = {
            "MarketplaceId": connection.id, "Platform": connection.platform, "Country": connection.country,
        }  # fmt: skip
        if loading is not None:  # the site had no category tree: a worker loads it
            connected["CategoriesJobId"] = loading
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
