"""admin marketplace connect|pause|resume|disconnect."""

from __future__ import annotations

import typer

from marketsync.kit.cli import JsonOption, emit, marketplace_app, run_command
from marketsync.marketplaces import service
from marketsync.runtime import Runtime


@marketplace_app.command("connect")
def connect(
    account: str = typer.Option(..., "--account"),
    platform: str = typer.Option(..., "--platform", help="P1, P2, P3 or P4."),
    country: str = typer.Option(..., "--country", help="Two letters, e.g. UK."),
    as_json: bool = JsonOption,
) -> None:
    """Connect a marketplace (stands for authorising it in the app)."""

    async def body(rt: Runtime) -> dict[str, object]:
        async with rt.db.transaction() as session:
            connection = await service.connect(rt, session, account, platform, country)
        return {"MarketplaceId": connection.id, "Platform": connection.platform, "Country": connection.country}

    emit(run_command(body, as_json=as_json), as_json)


def _state_command(name: str, state: str, help_text: str) -> None:
    @marketplace_app.command(name, help=help_text)
    def command(
        account: str = typer.Option(..., "--account"),
        marketplace: str = typer.Option(..., "--marketplace"),
        as_json: bool = JsonOption,
    ) -> None:
        async def body(rt: Runtime) -> dict[str, object]:
            async with rt.db.transaction() as session:
                await service.set_state(session, account, marketplace, state)
            return {"MarketplaceId": marketplace, "State": state}

        emit(run_command(body, as_json=as_json), as_json)


_state_command("pause", "Paused", "Pause: neither pulled nor pushed, omitted from GET /api/marketplaces.")
_state_command("resume", "Active", "Resume a paused connection.")


@marketplace_app.command("disconnect")
def disconnect(
    account: str = typer.Option(..., "--account"),
    marketplace: str = typer.Option(..., "--marketplace"),
    as_json: bool = JsonOption,
) -> None:
    """Disconnect: the connection and its listings are removed; nothing is pushed there again."""

    async def body(rt: Runtime) -> dict[str, object]:
        async with rt.db.transaction() as session:
            await service.disconnect(session, account, marketplace)
        return {"MarketplaceId": marketplace, "Disconnected": True}

    emit(run_command(body, as_json=as_json), as_json)
