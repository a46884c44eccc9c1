"""The catalogue: products, listings, the price/stock push and InventoryChanged events."""
