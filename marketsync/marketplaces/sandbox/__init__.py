"""The sandbox marketplaces P1..P4: simulated marketplaces (an HTTP app over their own sandbox_* tables) that serve
every kind until a real connector takes one over. Registered by marketplaces/registry.py."""

from __future__ import annotations

from marketsync.marketplaces.connector import Marketplace
from marketsync.marketplaces.sandbox import demo, taxonomies
from marketsync.marketplaces.sandbox.connector import sandbox_connector

MARKETPLACE = Marketplace(
    name="sandbox",
    platforms=("P1", "P2", "P3", "P4"),
    connector=sandbox_connector,
    shipped_taxonomy=taxonomies.generate,
    seed_demo=demo.seed,
)
