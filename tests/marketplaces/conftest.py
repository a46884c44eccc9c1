"""The marketplace tests' `side` fixture: a behaviour test parametrised over a sandbox kind and Amazon (sides.py)."""

from tests.marketplaces.sides import amazon_client_closed_first, side

__all__ = ["amazon_client_closed_first", "side"]
