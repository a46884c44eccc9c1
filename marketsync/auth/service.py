"""Use cases: accounts, credentials, issuing and authenticating access tokens."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.auth import repository, tokens, usage
from marketsync.auth.scopes import UnknownScopes, describe_unknown, parse_scopes
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.kit import crypto, zones
from marketsync.kit.ids import new_id
from marketsync.models import Account, Credential
from marketsync.runtime import Runtime

__all__ = [
    "MAX_GRACE",
    "Caller",
    "IssuedToken",
    "NewCredential",
    "TokenError",
    "authenticate",
    "create_account",
    "create_credential",
    "delete_credential",
    "issue_token",
    "list_credentials",
    "previous_secret_until",
    "rotate_credential",
]


CLIENT_ID_PREFIX = "msc_"
# The longest a rotated-out secret keeps working (Stripe's roll key offers the same week at most).
MAX_GRACE = timedelta(days=7)


@dataclass(frozen=True)
class Caller:
    """The authenticated credential behind a request."""

    account_id: str
    credential_id: str
    scopes: frozenset[str]


@dataclass(frozen=True)
class NewCredential:
    credential_id: str
    client_id: str
    client_secret: str  # shown once
    scopes: list[str]
    name: str = ""


@dataclass(frozen=True)
class IssuedToken:
    access_token: str
    expires_in: int
    scopes: list[str]


class TokenError(Exception):
    """An RFC 6749 section 5.2 error."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


async def find_account(session: AsyncSession, account_id: str) -> Account | None:
    return await repository.get_account(session, account_id)


async def find_account_by_name(session: AsyncSession, name: str) -> Account | None:
    return await repository.get_account_by_name(session, name)


async def create_account(rt: Runtime, session: AsyncSession, name: str) -> Account:
    account = Account(id=new_id(), name=name, created_at=rt.clock.now())
    session.add(account)
    await session.flush()
    return account


NOT_A_ZONE = "An IANA time zone, e.g. Europe/London or America/New_York."


async def set_time_zone(session: AsyncSession, account_id: str, name: str) -> str:
    """The account's time zone (the app shows its times in it; the API stays UTC): an IANA name the zone database
    lists, else a 400 naming TimeZone (docs/decisions/0435-account-time-zone.md)."""
    name = name.strip()
    if not zones.is_zone(name):
        raise ValidationFailed(errors={"TimeZone": [NOT_A_ZONE]})
    account = await repository.get_account(session, account_id)
    if account is None:
        raise NotFound("No account with this id.")
    account.time_zone = name
    return name


async def create_credential(
    rt: Runtime, session: AsyncSession, account_id: str, name: str, scopes: list[str]
) -> NewCredential:
    secret = crypto.random_secret(32)
    credential = Credential(
        id=new_id(),
        account_id=account_id,
        name=name,
        client_id=CLIENT_ID_PREFIX + crypto.random_secret(15),
        secret_hash=crypto.keyed_hash(rt.settings.hash_key, secret),
        scopes=" ".join(scopes),
        created_at=rt.clock.now(),
    )
    session.add(credential)
    await session.flush()
    return NewCredential(credential.id, credential.client_id, secret, scopes)


async def issue_token(rt: Runtime, client_id: str, client_secret: str, requested_scope: str | None) -> IssuedToken:
    """A signed token for the credential (docs/decisions/0250): one read on the raw driver, no write."""
    credential = await repository.find_credential_for_token(rt.db, client_id)
    # Hash even for an unknown client so timing does not reveal which client_ids exist.
    presented = crypto.keyed_hash(rt.settings.hash_key, client_secret)
    now_s = rt.clock.now().timestamp()
    # Whole seconds, rounded up: the token lives at least the expires_in it announces (docs/decisions/0285).
    expires_at = math.ceil(now_s) + rt.settings.token_ttl_s
    if credential is None:
        raise TokenError("invalid_client", "Client authentication failed.", 401)
    current = crypto.constant_time_equal(presented, credential.secret_hash)
    # A rotation's previous secret works until its grace period ends, and its tokens end then too (decision 0432).
    previous = (
        not current
        and credential.previous_secret_hash is not None
        and credential.previous_until_s is not None
        and now_s < credential.previous_until_s
        and crypto.constant_time_equal(presented, credential.previous_secret_hash)
    )
    if not (current or previous):
        raise TokenError("invalid_client", "Client authentication failed.", 401)
    if previous:
        assert credential.previous_until_s is not None
        expires_at = min(expires_at, credential.previous_until_s)
    granted = credential.scopes.split()
    if requested_scope is None or not requested_scope.strip():
        scopes = granted  # docs/decisions/0003-token-scope-default.md
    else:
        try:
            scopes = parse_scopes(requested_scope)
        except UnknownScopes as exc:
            raise TokenError("invalid_scope", describe_unknown(exc.names, withheld=client_secret)) from exc
        beyond = [s for s in scopes if s not in granted]
        if beyond:
            raise TokenError("invalid_scope", f"Scope not granted to this client: {' '.join(beyond)}.")
    token = tokens.issue(tokens.signing_key(rt.settings.hash_key), credential.credential_id, scopes, expires_at)
    usage.note(rt, credential.credential_id)
    return IssuedToken(token, expires_at - math.ceil(now_s), scopes)


async def authenticate(rt: Runtime, token: str) -> Caller | None:
    """The caller of a valid token whose credential still exists (read at every request: revocation is immediate)."""
    now_s = rt.clock.now().timestamp()
    claims = tokens.verify(tokens.signing_key(rt.settings.hash_key), token, now_s)
    if claims is None:
        return None
    row = await repository.find_credential(rt.db, claims.credential_id)
    if row is None:
        return None
    account_id, granted, rotated_s, previous_until_s = row
    # A token issued before a rotation (its issue time is its expiry less the TTL) stops with the previous secret.
    if (
        rotated_s is not None
        and previous_until_s is not None
        and now_s >= previous_until_s
        and claims.expires_at - rt.settings.token_ttl_s < rotated_s
    ):
        return None
    usage.note(rt, claims.credential_id)
    return Caller(account_id, claims.credential_id, claims.scopes.intersection(granted.split()))


async def list_credentials(session: AsyncSession, account_id: str) -> list[Credential]:
    return await repository.credentials_of(session, account_id)


async def rotate_credential(
    rt: Runtime, session: AsyncSession, account_id: str, credential_id: str, grace: timedelta
) -> NewCredential:
    """A new secret for the credential (shown once); the current one keeps working for `grace` (at most MAX_GRACE;
    zero: it stops now), then stops, with the tokens issued from it (docs/decisions/0432). Rotating again within a
    grace period ends the older secret at once: at most two secrets work at a time."""
    if grace < timedelta(0) or grace > MAX_GRACE:
        raise ValidationFailed(errors={"Grace": ["From none (at once) to 7 days."]})
    credential = await repository.get_credential(session, account_id, credential_id)
    if credential is None:
        raise NotFound("No credential with this id.")
    now = rt.clock.now()
    secret = crypto.random_secret(32)
    credential.previous_secret_hash = credential.secret_hash if grace else None
    credential.previous_secret_expires_at = now + grace
    credential.rotated_at = now
    credential.secret_hash = crypto.keyed_hash(rt.settings.hash_key, secret)
    await session.flush()
    return NewCredential(credential.id, credential.client_id, secret, credential.scopes.split(), credential.name)


def previous_secret_until(credential: Credential, now: datetime) -> datetime | None:
    """When the credential's previous secret stops, while it still works."""
    until = credential.previous_secret_expires_at
    return until if credential.previous_secret_hash and until is not None and until > now else None


async def delete_credential(session: AsyncSession, account_id: str, credential_id: str) -> str:
    """Delete the credential; its tokens stop working at once (every request reads its credential). Its name."""
    credential = await repository.get_credential(session, account_id, credential_id)
    if credential is None:
        raise NotFound("No credential with this id.")
    name = credential.name
    await repository.delete_credential(session, credential)
    return name
