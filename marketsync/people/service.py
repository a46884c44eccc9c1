"""Use cases of the merchant's people: create a user, sign in and out, find who a browser session belongs to.

Passwords are argon2id (argon2-cffi's defaults), verified off the event loop. A session is a random token in an
HttpOnly cookie; the database keeps its keyed hash, an idle expiry (30 min) and an absolute one (12 h), and a
revocation time ("sign out everywhere" revokes every session of the person). A new token is issued at every
sign-in, whatever cookie the browser sent, so a planted session id is worthless (no fixation).
Decisions: docs/decisions/0120-app-sign-in.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

import orjson
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.exceptions import InvalidTag
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.http.errors import Conflict, NotFound, ValidationFailed
from marketsync.kit import crypto
from marketsync.kit.ids import new_id
from marketsync.kit.ratelimit import RateLimiter
from marketsync.models.activity import ActivityEntry
from marketsync.models.people import AppSession, AppUser
from marketsync.people import repository
from marketsync.runtime import Runtime

__all__ = [
    "ABSOLUTE_EXPIRY",
    "ACTIVITY_RETENTION",
    "IDLE_EXPIRY",
    "ActivityKind",
    "NewUser",
    "Person",
    "Role",
    "SignInRefused",
    "acting_owner",
    "activity",
    "activity_people",
    "create_user",
    "ensure_user",
    "keep_reveal",
    "list_people",
    "new_password",
    "person_for",
    "purge_activity",
    "record_activity",
    "remove_user",
    "sign_in",
    "sign_out",
    "sign_out_everywhere",
    "take_reveal",
]

IDLE_EXPIRY = timedelta(minutes=30)
ABSOLUTE_EXPIRY = timedelta(hours=12)
# last_seen_at is written at most this often: a page view is not a database write.
_SEEN_EVERY = timedelta(minutes=1)
SIGN_IN_LIMIT = "10/minute"  # failed sign-ins per email and source
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}\.[^@\s]{2,63}$")
_hasher = PasswordHasher()
# Verified against when the email is unknown, so the answer takes as long as for a known one.
_UNKNOWN_USER_HASH = _hasher.hash(crypto.random_secret(16))


class Role(StrEnum):
    OWNER = "Owner"  # everything, credentials and people included
    STAFF = "Staff"  # everything but credentials and people


class SignInRefused(Exception):
    """Wrong email or password (one message for both), or too many attempts."""

    def __init__(self, message: str, *, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class NewUser:
    user_id: str
    email: str
    password: str = field(repr=False)  # shown once
    role: Role


@dataclass(frozen=True)
class Person:
    """Who a signed-in browser belongs to."""

    user_id: str
    account_id: str
    email: str
    role: Role
    csrf_token: str
    # The account's IANA time zone: the app shows every time in it (docs/decisions/0435-account-time-zone.md).
    time_zone: str = "UTC"

    @property
    def is_owner(self) -> bool:
        return self.role == Role.OWNER


def _normal_email(email: str) -> str:
    return email.strip().lower()


async def create_user(rt: Runtime, session: AsyncSession, account_id: str, email: str, role: str) -> NewUser:
    """A person of the account with a generated password (returned once)."""
    address = _normal_email(email)
    problems: dict[str, list[str]] = {}
    if not _EMAIL.match(address):
        problems["Email"] = ["An email address, e.g. ops@example.com."]
    if role not in tuple(Role):
        problems["Role"] = ["Owner or Staff."]
    if problems:
        raise ValidationFailed(errors=problems)
    if await repository.user_by_email(session, address) is not None:
        raise ValidationFailed(errors={"Email": ["A person with this email already exists."]})
    password = crypto.random_secret(18)
    user = AppUser(
        id=new_id(),
        account_id=account_id,
        email=address,
        password_hash=await asyncio.to_thread(_hasher.hash, password),
        role=role,
        created_at=rt.clock.now(),
    )
    session.add(user)
    try:
        await session.flush()
    except IntegrityError:
        raise ValidationFailed(errors={"Email": ["A person with this email already exists."]}) from None
    return NewUser(user.id, address, password, Role(role))


async def ensure_user(rt: Runtime, session: AsyncSession, account_id: str, email: str, role: str) -> NewUser:
    """The demo's person: created on first run; later runs give it a new password (shown once, like the
    demo's client secret) and sign its browsers out."""
    user = await repository.user_by_email(session, _normal_email(email))
    if user is None:
        return await create_user(rt, session, account_id, email, role)
    return await _replace_password(rt, session, user)


async def _replace_password(rt: Runtime, session: AsyncSession, user: AppUser) -> NewUser:
    """A new generated password (returned once), and every browser of the person signed out."""
    password = crypto.random_secret(18)
    user.password_hash = await asyncio.to_thread(_hasher.hash, password)
    await repository.revoke_sessions(session, user.id, rt.clock.now())
    return NewUser(user.id, user.email, password, Role(user.role))


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def _refuse_beyond_budget(limiter: RateLimiter | None, key: tuple[str, ...]) -> None:
    """SignInRefused (a 429) when the email and source have spent their budget: the attempt counts as one more."""
    if limiter is not None and not await limiter.peek(SIGN_IN_LIMIT, *key):
        decision = await limiter.hit(SIGN_IN_LIMIT, *key)
        raise SignInRefused("Too many attempts; wait a minute.", retry_after_s=max(1, decision.reset_in))


async def sign_in(rt: Runtime, email: str, password: str, source: str) -> str:
    """A new session token for the person, or SignInRefused. Failures are throttled per email and source."""
    address = _normal_email(email)
    key = ("app-sign-in", hashlib.sha256(address.encode()).hexdigest()[:32], source)
    limiter = rt.limiter
    await _refuse_beyond_budget(limiter, key)
    async with rt.db.read() as session:
        user = await repository.user_by_email(session, address)
    known_hash = user.password_hash if user is not None else _UNKNOWN_USER_HASH
    if not await asyncio.to_thread(_verify, known_hash, password) or user is None:
        if limiter is not None:
            decision = await limiter.hit(SIGN_IN_LIMIT, *key)
            if not decision.allowed:
                raise SignInRefused("Too many attempts; wait a minute.", retry_after_s=max(1, decision.reset_in))
        raise SignInRefused("Wrong email or password.")
    # Checked again now the seconds of hashing are over (as the token endpoint does, docs/decisions/0160): guesses
    # sent at once all pass the first check, and the right one must not open a session once the wrong ones have
    # spent the budget meanwhile. Refused like any attempt beyond the budget, so it teaches a guesser nothing.
    await _refuse_beyond_budget(limiter, key)
    token = crypto.random_secret(32)
    now = rt.clock.now()
    async with rt.db.transaction() as session:
        # Still the same password and person after the seconds of hashing: one replaced (or removed) meanwhile must
        # not open a session with the old one.
        current = await repository.user_by_id(session, user.id, for_update=True)
        if current is None or current.password_hash != user.password_hash:
            raise SignInRefused("Wrong email or password.")
        session.add(
            AppSession(
                token_hash=crypto.keyed_hash(rt.settings.hash_key, token),
                user_id=user.id,
                account_id=user.account_id,
                csrf_token=crypto.random_secret(24),
                created_at=now,
                last_seen_at=now,
                expires_at=now + ABSOLUTE_EXPIRY,
                revoked_at=None,
            )
        )
    return token


async def person_for(rt: Runtime, token: str, *, activity: bool = True) -> Person | None:
    """The person a session token belongs to, if the session is live (not revoked, idle or past its end).
    `activity=False` (a page refreshing itself in the background) reads the session without extending its idle
    time: an open tab left polling must not keep a session alive forever."""
    if not token or len(token) > 100:
        return None
    now = rt.clock.now()
    token_hash = crypto.keyed_hash(rt.settings.hash_key, token)
    async with rt.db.read() as session:
        found = await repository.session_with_user_and_zone(session, token_hash)
    if found is None:
        return None
    app_session, user, time_zone = found
    if (
        app_session.revoked_at is not None
        or now >= app_session.expires_at
        or now - app_session.last_seen_at > IDLE_EXPIRY
    ):
        return None
    if activity and now - app_session.last_seen_at > _SEEN_EVERY:
        async with rt.db.transaction() as session:
            live = await repository.session_with_user(session, token_hash)
            if live is not None:
                live[0].last_seen_at = now
    return Person(user.id, user.account_id, user.email, Role(user.role), app_session.csrf_token, time_zone)


async def sign_out(rt: Runtime, token: str) -> None:
    async with rt.db.transaction() as session:
        found = await repository.session_with_user(session, crypto.keyed_hash(rt.settings.hash_key, token))
        if found is not None and found[0].revoked_at is None:
            found[0].revoked_at = rt.clock.now()


async def sign_out_everywhere(rt: Runtime, user_id: str) -> int:
    """Revoke every session of the person (every browser signs in again). Returns how many were live."""
    async with rt.db.transaction() as session:
        return await repository.revoke_sessions(session, user_id, rt.clock.now())


async def list_people(session: AsyncSession, account_id: str) -> list[AppUser]:
    return await repository.users_of(session, account_id)


async def _person_of(session: AsyncSession, account_id: str, user_id: str) -> AppUser:
    """The account's person, locked (PostgreSQL): a new password and a removal of one person take it in one order."""
    user = await repository.user_by_id(session, user_id, for_update=True)
    if user is None or user.account_id != account_id:
        raise NotFound("No person with this id in this account.")
    return user


async def acting_owner(session: AsyncSession, account_id: str, by: str) -> None:
    """`by` is still one of the account's Owners (read locked): a request of an Owner removed while it ran changes
    nothing."""
    if by not in {owner.id for owner in await repository.owners_of_locked(session, account_id)}:
        raise Conflict("You are no longer an Owner of this account.")


async def remove_user(session: AsyncSession, account_id: str, user_id: str, *, by: str) -> str:
    """Remove a person of the account (`by`: the Owner doing it): their sessions end with them, so every browser of
    theirs is signed out at once. Not oneself: so the account's last Owner, the acting one, always stays. Their
    email."""
    await acting_owner(session, account_id, by)
    user = await _person_of(session, account_id, user_id)
    if user.id == by:
        raise Conflict("You cannot remove yourself: another Owner of the account can.")
    await repository.delete_user(session, user.id)
    return user.email


async def new_password(rt: Runtime, session: AsyncSession, account_id: str, user_id: str, *, by: str) -> NewUser:
    """A forgotten password replaced (`by`: the Owner doing it): a new generated one (shown once), and every browser
    of the person signed out."""
    await acting_owner(session, account_id, by)
    return await _replace_password(rt, session, await _person_of(session, account_id, user_id))


# -- what a page shows once (docs/decisions/0401-one-time-reveal.md) -----------------------------------------------

# A reveal waits this long for the page the form's redirect shows; then it is gone unseen.
REVEAL_WAITS = timedelta(minutes=5)
# At most this many reveals wait on one browser at once (several tabs): the oldest goes first.
MAX_REVEALS = 4


def _reveal_context(token_hash: str) -> str:
    """Binds the ciphertext to its session row: copied onto another browser's session, it fails to decrypt."""
    return f"app-reveal:{token_hash}"


def _waiting(rt: Runtime, row: AppSession, now: datetime) -> dict[str, dict[str, str]]:
    if not row.reveals:
        return {}
    try:
        opened = orjson.loads(
            crypto.decrypt(rt.settings.encryption_keyring, row.reveals, _reveal_context(row.token_hash))
        )
    except (InvalidTag, KeyError, ValueError):  # a key no longer configured: nothing to show
        return {}
    return {
        key: shown
        for key, shown in opened.items()
        if now - datetime.fromisoformat(str(shown.get("_at"))) <= REVEAL_WAITS
    }


def _store(rt: Runtime, row: AppSession, waiting: dict[str, dict[str, str]]) -> None:
    context = _reveal_context(row.token_hash)
    row.reveals = (
        crypto.encrypt(rt.settings.encryption_keyring, orjson.dumps(waiting).decode(), context) if waiting else None
    )


async def keep_reveal(rt: Runtime, session: AsyncSession, token: str, key: str, shown: dict[str, str]) -> None:
    """Keep what a page shows once (`shown`: a new secret and its labels) on the browser's session, encrypted, in the
    caller's transaction (the one that created the secret), for the page the form's redirect shows: that page
    takes it (`take_reveal`), so a reload shows it no more and posts nothing again."""
    row = await repository.app_session_locked(session, crypto.keyed_hash(rt.settings.hash_key, token))
    if row is None:  # pragma: no cover - the person was signed in a moment ago, in this request
        return
    now = rt.clock.now()
    waiting = _waiting(rt, row, now)
    waiting[key] = {**shown, "_at": now.isoformat()}
    _store(rt, row, dict(list(waiting.items())[-MAX_REVEALS:]))


async def take_reveal(rt: Runtime, token: str, key: str) -> dict[str, str] | None:
    """What `keep_reveal` kept under `key` on this browser's session, once: taken, it is gone. None when there is
    none (shown already, waited too long, another browser)."""
    if not token or len(token) > 100:
        return None
    async with rt.db.transaction() as session:
        row = await repository.app_session_locked(session, crypto.keyed_hash(rt.settings.hash_key, token))
        if row is None or not row.reveals:
            return None
        waiting = _waiting(rt, row, rt.clock.now())
        shown = waiting.pop(key, None)
        _store(rt, row, waiting)
    if shown is None:
        return None
    return {name: value for name, value in shown.items() if name != "_at"}


# -- the activity log (docs/decisions/0431-activity-log.md) ----------------------------------------------------------


class ActivityKind(StrEnum):
    HAND_EDIT = "HandEdit"
    CREDENTIAL = "Credential"
    PERSON = "Person"
    DATA_FLOW = "DataFlow"
    MARKETPLACE = "Marketplace"
    WEBHOOK = "Webhook"
    CUSTOMER_DATA = "CustomerData"


# Kept this long, then purged by the `people.activity-retention` schedule.
ACTIVITY_RETENTION = timedelta(days=180)
# A detail's name that could hold a secret is refused: the log never holds one, whatever a caller passes.
_SECRET_WORDS = ("secret", "password", "token", "key")


async def record_activity(
    rt: Runtime,
    session: AsyncSession,
    person: Person,
    kind: ActivityKind,
    action: str,
    subject: str,
    details: dict[str, str] | None = None,
) -> None:
    """What `person` did in the app, in the transaction that did it (a rollback drops the entry with the change)."""
    if details and any(word in name.lower() for name in details for word in _SECRET_WORDS):
        raise ValueError("an activity entry never holds a secret")
    entry = ActivityEntry(
        id=new_id(), account_id=person.account_id, user_id=person.user_id, actor=person.email, kind=kind,
        action=action, subject=subject[:300], details=details or None, created_at=rt.clock.now(),
    )  # fmt: skip
    await repository.add_activity(session, entry)


async def activity(
    session: AsyncSession,
    account_id: str,
    limit: int,
    *,
    user_id: str | None = None,
    kind: str | None = None,
    before: tuple[datetime, str] | None = None,
) -> list[ActivityEntry]:
    """The account's activity newest first, of one person and one kind when given, older than `before`."""
    return await repository.activity_of(session, account_id, limit, user_id=user_id, kind=kind, before=before)


async def activity_people(session: AsyncSession, account_id: str) -> list[tuple[str, str]]:
    return await repository.activity_people(session, account_id)


async def purge_activity(rt: Runtime, batch: int = 2_000) -> int:
    """Entries older than ACTIVITY_RETENTION, deleted in batches (a transaction each: SQLite's one writer)."""
    cutoff, purged = rt.clock.now() - ACTIVITY_RETENTION, 0
    while True:
        async with rt.db.transaction() as session:
            deleted = await repository.purge_activity(session, cutoff, batch)
        purged += deleted
        if deleted < batch:
            return purged
