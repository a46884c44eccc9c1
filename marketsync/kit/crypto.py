"""Secrets: random generation, keyed hashing (client secrets, tokens), AES-GCM at rest (webhook secrets)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def random_secret(nbytes: int = 32) -> str:
    """256-bit by default, URL-safe text."""
    return secrets.token_urlsafe(nbytes)


def keyed_hash(key: bytes, value: str) -> str:
    """Fast keyed hash for high-entropy secrets (they are not passwords, so no slow KDF)."""
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


def constant_time_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def encrypt(keyring: list[tuple[str, bytes]], plaintext: str, associated_data: str) -> str:
    """AES-256-GCM with the first key; output is `<key id>:<base64url(nonce || ciphertext)>`."""
    key_id, key = keyring[0]
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode(), associated_data.encode())
    return f"{key_id}:{base64.urlsafe_b64encode(nonce + sealed).decode()}"


def decrypt(keyring: list[tuple[str, bytes]], token: str, associated_data: str) -> str:
    key_id, _, encoded = token.partition(":")
    keys = dict(keyring)
    if key_id not in keys:
        raise KeyError(f"encryption key {key_id!r} is not configured")
    raw = base64.urlsafe_b64decode(encoded)
    return AESGCM(keys[key_id]).decrypt(raw[:12], raw[12:], associated_data.encode()).decode()


def needs_reencryption(keyring: list[tuple[str, bytes]], token: str) -> bool:
    return token.partition(":")[0] != keyring[0][0]
