"""Refuse to run with keys other than the ones a database was first used with.

Unset keys used to be generated into `./var` relative to the current directory: a command run from another
directory, another container or another host minted keys of its own, and every credential and webhook secret
created there failed elsewhere. The first process to use a database records a fingerprint of each key; every
later process compares its own and stops at start on a mismatch (docs/decisions/0162-keys-and-settings.md).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.config import Settings
from marketsync.kit.clock import Clock
from marketsync.models import KeyFingerprint

HASH_PURPOSE = "hash"
ENCRYPTION_PREFIX = "encryption:"
_LABEL = b"marketsync key fingerprint v1"


class KeysMismatch(Exception):
    """This process's keys are not the ones the database was used with. The message names the variable to fix."""


def fingerprint(key: bytes) -> str:
    return hmac.new(key, _LABEL, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class KeyReport:
    recorded: list[str]  # purposes recorded by this call (first use of a database, or a new encryption key)
    checked: list[str]  # purposes that matched a stored fingerprint


def expected(settings: Settings) -> dict[str, str]:
    prints = {HASH_PURPOSE: fingerprint(settings.hash_key)}
    for key_id, key in settings.encryption_keyring:
        prints[ENCRYPTION_PREFIX + key_id] = fingerprint(key)
    return prints


async def check_or_record(session: AsyncSession, settings: Settings, clock: Clock) -> KeyReport:
    """Compare this process's keys with the stored fingerprints; record the ones not seen before.

    - the secret hash key must match (client secrets and tokens are hashed under it);
    - an encryption key id seen before must hold the same key; a new id (rotation: a new first key) is recorded;
    - at least one encryption key seen before must still be configured, or no stored secret could be decrypted.
    """
    stored = {row.purpose: row.fingerprint for row in (await session.execute(select(KeyFingerprint))).scalars()}
    mine = expected(settings)
    if HASH_PURPOSE in stored and not hmac.compare_digest(stored[HASH_PURPOSE], mine[HASH_PURPOSE]):
        raise KeysMismatch(
            "MARKETSYNC_SECRET_HASH_KEY is not the key this database was first used with: every credential and "
            "token would be refused. Set it to the key the other processes use."
        )
    stored_encryption = {p: f for p, f in stored.items() if p.startswith(ENCRYPTION_PREFIX)}
    for purpose, value in stored_encryption.items():
        if purpose in mine and not hmac.compare_digest(value, mine[purpose]):
            key_id = purpose.removeprefix(ENCRYPTION_PREFIX)
            raise KeysMismatch(
                f"MARKETSYNC_ENCRYPTION_KEYS: key id {key_id!r} holds another key than the one this database was "
                "used with. Give each new key a new id."
            )
    if stored_encryption and not any(p in mine for p in stored_encryption):
        ids = ", ".join(sorted(p.removeprefix(ENCRYPTION_PREFIX) for p in stored_encryption))
        raise KeysMismatch(
            f"MARKETSYNC_ENCRYPTION_KEYS holds none of the keys this database was used with (ids: {ids}): no stored "
            "webhook secret could be decrypted."
        )
    now = clock.now()
    recorded = [purpose for purpose in mine if purpose not in stored]
    for purpose in recorded:
        session.add(KeyFingerprint(purpose=purpose, fingerprint=mine[purpose], created_at=now))
    await session.flush()
    return KeyReport(recorded=recorded, checked=[p for p in mine if p in stored])
