"""Signed access tokens (docs/decisions/0250-request-fixed-cost-2.md): issued without a database write, verified
without a token table.

A token carries its credential id, its scopes and its expiry, with an HMAC-SHA256 (truncated to 128 bits) under a
key derived from `MARKETSYNC_SECRET_HASH_KEY`. Nothing about a token is stored, so there is nothing to leak from the
database; revocation stays immediate because every request still reads the credential (deleting it fails every
one of its tokens on the next request, in every process).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import os
import struct
from typing import NamedTuple

from marketsync.auth.scopes import Scope

PREFIX = "mst_"
_VERSION = 1
# version, expiry (unix seconds), scope bits, nonce: then the credential id, then the MAC (57 bytes: no base64 padding).
_HEAD = struct.Struct(">BIB9s")
_MAC_BYTES = 16
_CREDENTIAL_ID_BYTES = 26  # kit.ids: 26 Crockford base32 characters
_BODY_BYTES = _HEAD.size + _CREDENTIAL_ID_BYTES
_TOKEN_BYTES = _BODY_BYTES + _MAC_BYTES
_TOKEN_CHARS = len(PREFIX) + len(base64.urlsafe_b64encode(bytes(_TOKEN_BYTES)))
# Fixed bits, never derived from the enum's order: a token issued before a reordering must keep its meaning.
_SCOPE_BITS = {
    Scope.OrdersRead: 1,
    Scope.OrdersWrite: 2,
    Scope.InventoryRead: 4,
    Scope.InventoryWrite: 8,
    Scope.MarketplacesRead: 16,
    Scope.WebhooksWrite: 32,
}
# Every subset of the six scopes, decoded once: a request never rebuilds the frozenset.
_SCOPE_SETS = tuple(
    frozenset(scope.value for scope, bit in _SCOPE_BITS.items() if mask & bit) for mask in range(1 << len(_SCOPE_BITS))
)


@functools.lru_cache(maxsize=4)
def signing_key(hash_key: bytes) -> bytes:
    """A key of its own for tokens, so a token MAC can never be confused with a stored secret hash."""
    return hmac.new(hash_key, b"marketsync access token v1", hashlib.sha256).digest()


@functools.lru_cache(maxsize=4)
def _keyed_hmac(key: bytes) -> hmac.HMAC:
    """HMAC-SHA256 with the key already absorbed, once per key: a token's MAC copies it (OpenSSL's copy) instead of
    keying a new one each time."""
    return hmac.new(key, digestmod=hashlib.sha256)


def _mac(key: bytes, body: bytes) -> bytes:
    """HMAC-SHA256(key, body), truncated to 128 bits."""
    mac = _keyed_hmac(key).copy()
    mac.update(body)
    return mac.digest()[:_MAC_BYTES]


class TokenClaims(NamedTuple):
    credential_id: str
    scopes: frozenset[str]
    expires_at: int  # unix seconds


def issue(key: bytes, credential_id: str, scopes: list[str], expires_at: int) -> str:
    mask = 0
    for name in scopes:
        mask |= _SCOPE_BITS[Scope(name)]
    encoded_id = credential_id.encode("ascii")
    if len(encoded_id) != _CREDENTIAL_ID_BYTES:
        raise ValueError("credential ids are 26 characters")
    body = _HEAD.pack(_VERSION, expires_at, mask, os.urandom(9)) + encoded_id
    return PREFIX + base64.urlsafe_b64encode(body + _mac(key, body)).decode("ascii")


def verify(key: bytes, token: str, now: float) -> TokenClaims | None:
    """The claims of a well-formed, authentic, unexpired token; None for anything else."""
    if len(token) != _TOKEN_CHARS or not token.startswith(PREFIX):
        return None
    encoded = token[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(encoded)
    except (binascii.Error, ValueError):
        return None
    # One spelling per token: the decoder also reads '+' and '/', and skips characters outside base64.
    if base64.urlsafe_b64encode(raw) != encoded.encode("ascii"):
        return None
    body, mac = raw[:_BODY_BYTES], raw[_BODY_BYTES:]
    if not hmac.compare_digest(mac, _mac(key, body)):
        return None
    version, expires_at, mask, _nonce = _HEAD.unpack_from(body)
    if version != _VERSION or expires_at <= now or mask >= len(_SCOPE_SETS):
        return None
    return TokenClaims(body[_HEAD.size :].decode("ascii"), _SCOPE_SETS[mask], expires_at)
