"""A fake marketplace connector, so task handlers are tested without HTTP: a script of what each call answers.

fake = FakeConnector.install(rt, "P1")
fake.feed_statuses = ["Processing", "Done"]
fake.fail_next("submit_price_stock", Throttled(2.0))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from marketsync.catalog.taxonomy import Taxonomy
from marketsync.marketplaces.connector import (
    Authorisation,
    AuthStatus,
    CategorySchema,
    Connector,
    ConsentStart,
    FeedResult,
    ItemError,
    ListingDraft,
    ListingPage,
    MarketplaceError,
    OrderPage,
    OrderUpdateLine,
    PriceStockLine,
    registry_of,
)
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime


@dataclass
class FakeConnector:
    """Answers every connection of one kind. Records what was sent; raises what it is told to raise."""

    feed_statuses: list[str] = field(default_factory=lambda: ["Done"])
    item_errors: list[ItemError] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    submitted: list[tuple[str, list[PriceStockLine]]] = field(default_factory=list)
    # Consent: where begin_consent sends the merchant (None: the app's own page), and the answers finish_consent got.
    consent_url: str | None = None
    consents: list[tuple[str, str]] = field(default_factory=list)
    answers: list[dict[str, str]] = field(default_factory=list)
    tree: Taxonomy | None = None
    _failures: dict[str, list[MarketplaceError]] = field(default_factory=dict)

    @classmethod
    def install(cls, rt: Runtime, platform: str) -> FakeConnector:
        fake = cls()

        def factory(_rt: Runtime, _connection: MarketplaceConnection) -> Connector:
            return fake

        registry_of(rt).replace(platform, factory)
        return fake

    def fail_next(self, call: str, error: MarketplaceError) -> None:
        self._failures.setdefault(call, []).append(error)

    def _enter(self, call: str) -> None:
        self.calls[call] += 1
        pending = self._failures.get(call)
        if pending:
            raise pending.pop(0)

    async def begin_consent(self, state: str, callback_url: str) -> ConsentStart:
        self._enter("begin_consent")
        self.consents.append((state, callback_url))
        return ConsentStart(None if self.consent_url is None else f"{self.consent_url}?state={state}")

    async def finish_consent(self, answer: Mapping[str, str]) -> Authorisation:
        self._enter("finish_consent")
        self.answers.append(dict(answer))
        return Authorisation(seller_id=answer.get("selling_partner_id"))

    async def category_tree(self) -> Taxonomy | None:
        self._enter("category_tree")
        return self.tree

    async def category_schema(self, category_id: str) -> CategorySchema:
        self._enter("category_schema")
        category = self.tree.get(category_id) if self.tree is not None else None
        if category is None:
            raise MarketplaceError(f"no category {category_id!r}")
        return CategorySchema(category, version="1")

    async def check_authorization(self) -> AuthStatus:
        self._enter("check_authorization")
        return AuthStatus(True, "Healthy", "")

    async def pull_orders(self, cursor: str | None, limit: int = 100) -> OrderPage:
        self._enter("pull_orders")
        return OrderPage([], cursor)

    async def pull_listings(self, cursor: str | None, limit: int = 200) -> ListingPage:
        self._enter("pull_listings")
        return ListingPage([], 0, None)

    async def submit_price_stock(self, feed_id: str, lines: list[PriceStockLine]) -> str:
        self._enter("submit_price_stock")
        self.submitted.append((feed_id, lines))
        return f"fake-{feed_id}"

    async def publish_listings(self, feed_id: str, drafts: list[ListingDraft]) -> str:
        self._enter("publish_listings")
        return f"fake-{feed_id}"

    async def send_order_updates(self, feed_id: str, lines: list[OrderUpdateLine]) -> str:
        self._enter("send_order_updates")
        return f"fake-{feed_id}"

    async def feed_result(self, marketplace_feed_id: str) -> FeedResult:
        self._enter("feed_result")
        status = self.feed_statuses.pop(0) if len(self.feed_statuses) > 1 else self.feed_statuses[0]
        processed = 0 if status != "Done" else 1
        return FeedResult(marketplace_feed_id, status, processed, list(self.item_errors))  # type: ignore[arg-type]
