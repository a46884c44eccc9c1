"""marketsync: the Marketplace Inventory and Orders Service."""

__version__ = "0.1.0"
