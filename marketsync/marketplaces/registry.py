"""The composition root of marketplace connectors: the one place that says which implementation serves which
marketplace kind. The app, the worker and every CLI command compose a runtime here before using it.

Adding a real marketplace: a kind in marketsync/kinds.py, a `Connector` implementation, and one `register` line
below. Tests swap a kind's connector with `registry_of(rt).replace(...)` (tests/support/connectors.py).
"""

from __future__ import annotations

from marketsync.kinds import KINDS
from marketsync.marketplaces.connector import REGISTRY_KEY, ConnectorRegistry
from marketsync.marketplaces.sandbox.connector import sandbox_connector
from marketsync.runtime import Runtime


def compose_connectors(rt: Runtime) -> Runtime:
    """Give the runtime its connectors (once; composing again keeps the first registry). Returns the runtime."""
    if REGISTRY_KEY not in rt.extras:
        registry = ConnectorRegistry()
        for platform in KINDS:  # the sandbox serves every kind until a real connector takes one over
            registry.register(platform, sandbox_connector)
        rt.extras[REGISTRY_KEY] = registry
    return rt
