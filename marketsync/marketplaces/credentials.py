"""A connection's long-lived secret at its marketplace (Amazon: the LWA refresh token), sealed at rest: AES-GCM with
the service's first encryption key, bound to the connection's id (kit/crypto.py; docs/decisions/0377). Sealed when a
consent is granted (service.grant_consent), unsealed by the connection's connector; never logged, never shown."""

from __future__ import annotations

from marketsync.kit.crypto import decrypt, encrypt
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

__all__ = ["seal", "unseal"]


def _associated(connection_id: str) -> str:
    return f"marketplace-credential:{connection_id}"


def seal(rt: Runtime, connection_id: str, secret: str) -> str:
    """The secret as stored on the connection."""
    return encrypt(rt.settings.encryption_keyring, secret, _associated(connection_id))


def unseal(rt: Runtime, connection: MarketplaceConnection) -> str | None:
    """The connection's secret in clear, or None when it holds none."""
    if not connection.credential:
        return None
    return decrypt(rt.settings.encryption_keyring, connection.credential, _associated(connection.id))
