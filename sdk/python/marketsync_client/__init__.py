"""Typed Python client for the marketsync API.

``marketsync_client.webhooks`` (verify and parse deliveries) uses the standard library only, and importing it
does not import httpx or pydantic: this package's top level imports nothing eagerly.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
