"""Tables of the sandbox domain."""

from __future__ import annotations
