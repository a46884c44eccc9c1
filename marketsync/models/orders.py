"""Tables of the orders domain."""

from __future__ import annotations
