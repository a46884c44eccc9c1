"""Amazon's Selling Partner API: the connector of kind Amazon (connector.py and the modules it speaks through), its
published contracts (contracts/), its sites (regions.py), and a stateful simulator of it (simulator/) that tests,
the demo and benchmarks run against. Registered by marketplaces/registry.py."""

from __future__ import annotations

from marketsync.marketplaces.amazon.connector import PLATFORM, amazon_connector
from marketsync.marketplaces.connector import Marketplace

MARKETPLACE = Marketplace(name="amazon", platforms=(PLATFORM,), connector=amazon_connector)
