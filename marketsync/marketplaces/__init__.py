"""Marketplace kinds, connections, connectors and the sandbox marketplaces."""
