"""The webhook fixtures (a trustme CA, the fake resolver, the loopback HTTPS receiver), for subscriptions and real
deliveries checked against the document."""

from tests.webhooks.conftest import fake_dns, receiver, settings_overrides, tls

__all__ = ["fake_dns", "receiver", "settings_overrides", "tls"]
