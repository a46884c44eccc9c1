"""HTTP endpoints of this domain (thin: parse, call the service, shape the response)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
