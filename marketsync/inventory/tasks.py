"""Task handlers and schedules of this domain.

The catalogue has no background work of its own: the push enqueues `PriceStockPush` jobs (payload
`{"MarketplaceId", "ProductIds"}`), whose handler sends the feed and lives in marketsync/marketplaces/tasks.py.
"""
