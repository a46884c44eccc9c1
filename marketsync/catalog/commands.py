"""CLI commands of this domain (registered on the groups in marketsync.kit.cli)."""
