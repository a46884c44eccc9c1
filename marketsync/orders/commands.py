"""CLI commands of this domain (registered on the groups in marketsync.kit.cli).

The orders domain adds no operator command of its own: orders are read and changed through the API, and
`marketsync admin pull-orders` (marketplaces domain) pulls them in on demand.
"""
