"""Outbound webhooks: the event outbox, subscriptions, signed SSRF-safe delivery.

For integrators: `verify(secret, headers, body, now=None)` checks a delivery's signature (spec section 6).
"""

from marketsync.webhooks.rules import verify

__all__ = ["verify"]
