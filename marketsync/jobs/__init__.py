"""Asynchronous jobs: rows enqueued in the caller's transaction, claimed by workers with leases."""
