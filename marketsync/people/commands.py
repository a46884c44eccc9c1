"""`marketsync admin user create`: a person who signs in to the app, with a generated password (shown once)."""

from __future__ import annotations

import typer

from marketsync.auth import service as auth_service
from marketsync.http.errors import NotFound
from marketsync.kit.cli import JsonOption, emit, user_app
from marketsync.people import service
from marketsync.runtime import Runtime
from marketsync.startup import run_command


@user_app.command("create")
def user_create(
    account: str = typer.Option(..., "--account", help="Account id."),
    email: str = typer.Option(..., "--email"),
    role: str = typer.Option(..., "--role", help="Owner or Staff."),
    as_json: bool = JsonOption,
) -> None:
    """Create a person of the account; prints the generated password once."""

    async def body(rt: Runtime) -> dict[str, str]:
        async with rt.db.transaction() as session:
            if await auth_service.find_account(session, account) is None:
                raise NotFound("No account with this id.")
            created = await service.create_user(rt, session, account, email, role)
        return {"UserId": created.user_id, "Email": created.email, "Password": created.password, "Role": created.role}

    emit(run_command(body, as_json=as_json), as_json)
