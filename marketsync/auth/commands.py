"""admin account create, admin credential create|delete."""

from __future__ import annotations

import typer

from marketsync.auth import service
from marketsync.auth.scopes import parse_scopes
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.kit.cli import JsonOption, account_app, credential_app, emit
from marketsync.runtime import Runtime
from marketsync.startup import run_command


@account_app.command("create")
def account_create(name: str = typer.Option(..., "--name"), as_json: bool = JsonOption) -> None:
    """Create a merchant account."""

    async def body(rt: Runtime) -> dict[str, str]:
        async with rt.db.transaction() as session:
            if await service.find_account_by_name(session, name) is not None:
                raise ValidationFailed(errors={"name": ["An account with this name exists."]})
            account = await service.create_account(rt, session, name)
            return {"AccountId": account.id}

    emit(run_command(body, as_json=as_json), as_json)


@credential_app.command("create")
def credential_create(
    account: str = typer.Option(..., "--account"),
    name: str = typer.Option(..., "--name"),
    scopes: str = typer.Option(..., "--scopes", help='Space-separated, e.g. "OrdersRead InventoryWrite".'),
    as_json: bool = JsonOption,
) -> None:
    """Create an API credential; its secret is shown once, here."""

    async def body(rt: Runtime) -> dict[str, object]:
        try:
            granted = parse_scopes(scopes.replace(",", " "))
        except ValueError as exc:
            raise ValidationFailed(errors={"scopes": [str(exc)]}) from exc
        if not granted:
            raise ValidationFailed(errors={"scopes": ["At least one scope."]})
        async with rt.db.transaction() as session:
            if await service.find_account(session, account) is None:
                raise NotFound("No such account.")
            created = await service.create_credential(rt, session, account, name, granted)
        return {
            "CredentialId": created.credential_id,
            "client_id": created.client_id,
            "client_secret": created.client_secret,
            "Scopes": created.scopes,
        }

    emit(run_command(body, as_json=as_json), as_json)


@credential_app.command("delete")
def credential_delete(
    account: str = typer.Option(..., "--account"),
    credential: str = typer.Option(..., "--credential"),
    as_json: bool = JsonOption,
) -> None:
    """Delete a credential; its tokens stop working at once."""

    async def body(rt: Runtime) -> dict[str, object]:
        async with rt.db.transaction() as session:
            try:
                await service.delete_credential(session, account, credential)
            except NotFound:
                raise NotFound("No such credential in this account.") from None
        return {"CredentialId": credential, "Deleted": True}

    emit(run_command(body, as_json=as_json), as_json)
