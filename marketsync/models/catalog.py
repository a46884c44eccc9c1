"""Tables of the catalog domain."""

from __future__ import annotations
