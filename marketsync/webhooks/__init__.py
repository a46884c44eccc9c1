"""Outbound webhooks: the event outbox, subscriptions, signed SSRF-safe delivery."""
