"""The inventory: the account's products (what the spec calls its catalogue), their listings as the marketplaces hold
them, the price/stock push, the listing mirror and InventoryChanged events."""
