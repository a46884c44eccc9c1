"""Tables of the webhooks domain."""

from __future__ import annotations
