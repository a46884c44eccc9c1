"""Connectors are composed in one place (marketsync/marketplaces/registry.py); the registry knows no implementation."""

from __future__ import annotations

from pathlib import Path

import pytest

from marketsync.config import Settings
from marketsync.kinds import KINDS
from marketsync.marketplaces.connector import ConnectorRegistry, UnknownMarketplaceKind, connector_for, registry_of
from marketsync.marketplaces.registry import compose_connectors
from marketsync.marketplaces.sandbox.connector import SandboxConnector
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.support.connectors import FakeConnector


def _connection(platform: str) -> MarketplaceConnection:
    return MarketplaceConnection(id="M1", account_id="A1", platform=platform, country="UK")


async def test_every_kind_is_composed_with_the_sandbox_until_a_real_connector_takes_it(rt: Runtime) -> None:
    assert registry_of(rt).platforms == sorted(KINDS)
    assert isinstance(connector_for(rt, _connection("P1")), SandboxConnector)


async def test_an_unknown_kind_is_a_clear_error(rt: Runtime) -> None:
    with pytest.raises(UnknownMarketplaceKind, match="no connector is registered for marketplace kind 'P9'"):
        connector_for(rt, _connection("P9"))


def test_registering_a_kind_twice_is_refused() -> None:
    registry = ConnectorRegistry()
    registry.register("P1", lambda rt, c: FakeConnector())
    with pytest.raises(ValueError, match="already registered"):
        registry.register("P1", lambda rt, c: FakeConnector())


async def test_a_runtime_without_composition_says_so(tmp_path: Path) -> None:
    keys = {"encryption_keys": "x1:" + "A" * 43, "secret_hash_key": "B" * 43}
    bare = Runtime.create(Settings(database_url=f"sqlite:///{tmp_path}/bare.db", **keys))
    try:
        with pytest.raises(UnknownMarketplaceKind, match="compose"):
            connector_for(bare, _connection("P1"))
        assert compose_connectors(bare) is bare
        assert compose_connectors(bare) is bare and registry_of(bare).platforms == sorted(KINDS)  # idempotent
    finally:
        await bare.close()


async def test_a_fake_replaces_one_kind_only(rt: Runtime) -> None:
    fake = FakeConnector.install(rt, "P2")
    assert connector_for(rt, _connection("P2")) is fake
    assert isinstance(connector_for(rt, _connection("P1")), SandboxConnector)
