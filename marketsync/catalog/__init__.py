"""The catalog: the marketplaces' category trees and schemas (taxonomy/: import, search, schema) and the listings
made of the inventory's products (listings/: create, publish, the app's fields). One repository and one router for
both (decision 0441)."""
