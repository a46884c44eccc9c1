"""Key fingerprints: the first process records them; later ones must hold the same keys (both databases)."""

from __future__ import annotations

import base64

import pytest

from marketsync.auth import keys
from marketsync.config import Settings
from marketsync.runtime import Runtime


def _key(byte: bytes) -> str:
    return base64.urlsafe_b64encode(byte * 32).decode()


def _with(rt: Runtime, **overrides: str) -> Settings:
    return rt.settings.model_copy(update=overrides)


async def _check(rt: Runtime, settings: Settings) -> keys.KeyReport:
    async with rt.db.transaction() as session:
        return await keys.check_or_record(session, settings, rt.clock)


async def test_first_use_records_and_the_same_keys_match(rt: Runtime) -> None:
    first = await _check(rt, rt.settings)
    assert set(first.recorded) == {"hash", "encryption:t1"} and first.checked == []
    again = await _check(rt, rt.settings)
    assert again.recorded == [] and set(again.checked) == {"hash", "encryption:t1"}


async def test_another_hash_key_is_refused(rt: Runtime) -> None:
    await _check(rt, rt.settings)
    with pytest.raises(keys.KeysMismatch, match="MARKETSYNC_SECRET_HASH_KEY"):
        await _check(rt, Settings(**{**rt.settings.model_dump(), "secret_hash_key": _key(b"x")}))


async def test_rotation_adds_a_key_and_reusing_an_id_for_another_key_is_refused(rt: Runtime) -> None:
    await _check(rt, rt.settings)
    original = rt.settings.encryption_keys
    rotated = Settings(**{**rt.settings.model_dump(), "encryption_keys": f"t2:{_key(b'n')},{original}"})
    assert (await _check(rt, rotated)).recorded == ["encryption:t2"]
    reused = Settings(**{**rt.settings.model_dump(), "encryption_keys": f"t1:{_key(b'z')}"})
    with pytest.raises(keys.KeysMismatch, match="key id 't1'"):
        await _check(rt, reused)
    unknown_only = Settings(**{**rt.settings.model_dump(), "encryption_keys": f"t9:{_key(b'q')}"})
    with pytest.raises(keys.KeysMismatch, match="none of the keys"):
        await _check(rt, unknown_only)


def test_fingerprints_reveal_nothing_of_the_key() -> None:
    key = b"s" * 32
    assert keys.fingerprint(key) != base64.urlsafe_b64encode(key).decode()
    assert keys.fingerprint(key) == keys.fingerprint(key) and keys.fingerprint(key) != keys.fingerprint(b"t" * 32)
