"""The marketplace tests' `side` fixture: a behaviour test parametrised over a sandbox kind and Amazon (sides.py)."""

from tests.marketplaces.sides import side

__all__ = ["side"]
