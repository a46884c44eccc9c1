"""The composition root of the marketplace implementations: the one place that says which implementation serves
which marketplace kind (kinds.py). The app, the worker and every CLI command compose a runtime here before using it.

Adding a marketplace is one package under marketplaces/ and one line in MARKETPLACES (marketplaces/README.md).
Tests swap a kind's connector with `registry_of(rt).replace(...)` (tests/support/connectors.py).
"""

from __future__ import annotations

from marketsync.catalog.taxonomy import Taxonomy
from marketsync.marketplaces import amazon, sandbox
from marketsync.marketplaces.connector import REGISTRY_KEY, ConnectorRegistry, Marketplace
from marketsync.runtime import Runtime

MARKETPLACES: tuple[Marketplace, ...] = (
    sandbox.MARKETPLACE,  # P1..P4, simulated
    amazon.MARKETPLACE,  # Amazon's Selling Partner API (docs/decisions/0370)
)


def compose_connectors(rt: Runtime) -> Runtime:
    """Give the runtime its connectors (once; composing again keeps the first registry). Returns the runtime."""
    if REGISTRY_KEY not in rt.extras:
        registry = ConnectorRegistry()
        for marketplace in MARKETPLACES:
            registry.add(marketplace)
        rt.extras[REGISTRY_KEY] = registry
    return rt


def shipped_taxonomy(platform: str, revision: int = 1, size: int | None = None) -> Taxonomy | None:
    """The tree a kind ships whole, without a connection (the operator's import and export without a file); None for
    a kind whose categories come from its marketplace only."""
    for marketplace in MARKETPLACES:
        if platform in marketplace.platforms and marketplace.shipped_taxonomy is not None:
            return marketplace.shipped_taxonomy(platform, revision, size)
    return None
