"""marketsync: the Marketplace Inventory and Orders Service."""

__version__ = "0.2.0"
