"""`Client` (sync) and `AsyncClient`: tokens, retries, one typed method per operation, paging and job waits.

Both classes have the same methods with the same parameters (sdk/python/tests checks it); the async ones are
coroutines and the iterators are async iterators. What they share without I/O lives in `_core`,
`_operations` and `paging`.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, ParamSpec, Self, TypeVar

import httpx

from marketsync_client import __version__
from marketsync_client import _operations as ops
from marketsync_client import models as m
from marketsync_client._core import (
    RECORDER,
    CachedToken,
    Call,
    RateLimit,
    RawResponse,
    ResponseRecorder,
    RetryPolicy,
    api_error,
    cached_token,
    decode_json,
    log_attempt,
    nothing_called,
    rate_limit,
    record,
    retry_delay_after_error,
    retry_delay_after_response,
    token_error,
    token_form,
)
from marketsync_client.errors import JobTimeout, TransportError
from marketsync_client.paging import (
    MAX_PAGE,
    AsyncPaged,
    Paged,
    async_modified_since_walk,
    async_offset_walk,
    async_order_walk,
    modified_since_walk,
    offset_walk,
    order_walk,
)

T = TypeVar("T")
P = ParamSpec("P")

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
USER_AGENT = f"marketsync-client/{__version__}"
# Renew a token this long before it expires (at most a tenth of its lifetime early).
TOKEN_MARGIN_S = 60.0


class _Base:
    """Configuration and the token cache, common to both clients."""

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        scopes: Sequence[str] | None = None,
        token_url: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        user_agent: str | None = None,
    ) -> None:
        self.client_id = client_id
        self._client_secret = client_secret
        self.base_url = base_url.rstrip("/")
        # None: the token carries every scope of the credential; a subset narrows it (least privilege).
        self.scopes = tuple(scopes) if scopes is not None else None
        self.token_url = token_url or f"{self.base_url}/connect/token"
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.user_agent = user_agent or USER_AGENT
        self._token: CachedToken | None = None
        # Seconds, for the token cache's expiry (time.monotonic); tests move it instead of waiting.
        self._clock: Callable[[], float] = time.monotonic
        self.tokens_fetched = 0
        # The credential's rate-limit budget as the last response reported it.
        self.rate_limit: RateLimit | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, client_id={self.client_id!r})"

    @staticmethod
    def env_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
        env = os.environ if environ is None else environ
        try:
            return {
                "client_id": env["MARKETSYNC_CLIENT_ID"],
                "client_secret": env["MARKETSYNC_CLIENT_SECRET"],
                "base_url": env.get("MARKETSYNC_BASE_URL", DEFAULT_BASE_URL),
            }
        except KeyError as missing:
            raise KeyError(f"set {missing.args[0]} (and MARKETSYNC_BASE_URL if not {DEFAULT_BASE_URL})") from None

    def _fresh_token(self) -> str | None:
        token = self._token
        return token.value if token is not None and token.fresh(self._clock(), TOKEN_MARGIN_S) else None

    def _forget(self, value: str) -> None:
        # Only the token that was refused: another caller may already have renewed it.
        if self._token is not None and self._token.value == value:
            self._token = None

    def _request_headers(self, call: Call[Any], token: str) -> dict[str, str]:
        return {**call.headers(), "Authorization": f"Bearer {token}", "User-Agent": self.user_agent}

    def _parse(self, call: Call[T], response: httpx.Response) -> T:
        return call.parse(decode_json(response.content) if response.content else None)

    def _observe(self, response: httpx.Response) -> None:
        self.rate_limit = rate_limit(response.headers) or self.rate_limit

    def _poll_delay(self, delay: float) -> float:
        """Job polls spend the shared budget too: with none left, wait for the window to reset."""
        budget = self.rate_limit
        if budget is not None and budget.remaining <= 1:
            return max(delay, budget.reset_s - (time.monotonic() - budget.observed_at))
        return delay


class Client(_Base):
    """The synchronous client. Thread-safe; use one per credential and reuse it (it pools connections).

    >>> with Client(client_id, client_secret, base_url="https://api.example", scopes=["OrdersRead"]) as api:
    ...     for order in api.iter_orders(order_statuses=["Unshipped"]):
    ...         print(order.ServiceOrderID)
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        scopes: Sequence[str] | None = None,
        token_url: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        user_agent: str | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            client_id,
            client_secret,
            base_url=base_url,
            scopes=scopes,
            token_url=token_url,
            timeout=timeout,
            retry=retry,
            user_agent=user_agent,
        )
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self._token_lock = threading.Lock()

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        """From MARKETSYNC_CLIENT_ID, MARKETSYNC_CLIENT_SECRET and MARKETSYNC_BASE_URL."""
        return cls(**{**cls.env_settings(), **options})

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # --------------------------------------------------------------------------------------------- plumbing

    def fetch_token(self) -> m.Token:
        """A new access token (the client fetches, caches and renews tokens by itself; this forces one)."""
        attempt = 0
        while True:
            attempt += 1
            started = self._clock()
            try:
                response = self._http.post(
                    self.token_url,
                    data=token_form(self.client_id, self._client_secret, self.scopes),
                    headers={"Accept": "application/json", "User-Agent": self.user_agent},
                )
            except httpx.TransportError as error:
                log_attempt("POST", _TOKEN_CALL.path, attempt, started, None, error)
                delay = retry_delay_after_error(self.retry, _TOKEN_CALL, attempt, error)
                if delay is None:
                    raise TransportError(f"token request failed: {error!r}") from error
                time.sleep(delay)
                continue
            log_attempt("POST", _TOKEN_CALL.path, attempt, started, response, None)
            if response.is_success:
                body = decode_json(response.content)
                self._token = cached_token(body, started)
                self.tokens_fetched += 1
                record(response, attempt)
                return m.Token.model_validate(body)
            # Token requests are safe to repeat, but a refused secret or scope is final (and throttled).
            delay = retry_delay_after_response(self.retry, _TOKEN_CALL, attempt, response)
            if delay is None or response.status_code < 500:
                raise token_error(response)
            time.sleep(delay)

    def with_raw_response(self, method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> RawResponse[T]:
        """Call one of this client's methods and return its result with the HTTP response it came from: status,
        headers (``X-Request-Id``, ``Idempotent-Replayed``, the rate limit) and the attempts it took.

        >>> raw = api.with_raw_response(api.push_price_quantity, items, idempotency_key=key)
        >>> raw.parsed.Updated, raw.status_code, raw.request_id, raw.replayed

        Only the calls made inside are recorded, in this thread (or task) alone; with several calls (a job wait),
        the last one's. An iterator calls the API only as it is walked: wrap its page method (``list_orders``)."""
        recorder = ResponseRecorder()
        token = RECORDER.set(recorder)
        try:
            parsed = method(*args, **kwargs)
        finally:
            RECORDER.reset(token)
        return recorder.result(parsed, getattr(method, "__name__", "the method"))

    def _access_token(self) -> str:
        token = self._fresh_token()
        if token is not None:
            return token
        with self._token_lock:
            token = self._fresh_token()  # another thread may have renewed it meanwhile
            return token if token is not None else self.fetch_token().access_token

    def _send(self, call: Call[T]) -> T:
        content, url = call.content(), self.base_url + call.path
        attempt, renewed = 0, False
        while True:
            attempt += 1
            token = self._access_token()
            started = time.monotonic()
            try:
                response = self._http.request(
                    call.method, url, params=call.params, content=content, headers=self._request_headers(call, token)
                )
            except httpx.TransportError as error:
                log_attempt(call.method, call.path, attempt, started, None, error)
                delay = retry_delay_after_error(self.retry, call, attempt, error)
                if delay is None:
                    raise TransportError(f"{call.method} {call.path} failed: {error!r}") from error
                time.sleep(delay)
                continue
            log_attempt(call.method, call.path, attempt, started, response, None)
            self._observe(response)
            if response.status_code == 401 and not renewed:
                # Expired or revoked early: renew once and repeat (a 401 is refused before anything is done).
                renewed = True
                attempt -= 1
                self._forget(token)
                continue
            if response.is_success:
                record(response, attempt)
                return self._parse(call, response)
            delay = retry_delay_after_response(self.retry, call, attempt, response)
            if delay is None:
                raise api_error(response)
            time.sleep(delay)

    # --------------------------------------------------------------------------------------------- orders

    def list_orders(
        self,
        *,
        service_order_ids: Sequence[str] | None = None,
        order_statuses: Sequence[m.OrderStatus] | None = None,
        updated_since: datetime | None = None,
        from_date: datetime | None = None,
        to_date: datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        include_customer_data: bool | None = None,
    ) -> m.OrderPage:
        """One page of orders, oldest change first (``POST /api/orders/List``); see `iter_orders` for all."""
        return self._send(
            ops.list_orders(
                service_order_ids=service_order_ids,
                order_statuses=order_statuses,
                updated_since=updated_since,
                from_date=from_date,
                to_date=to_date,
                limit=limit,
                cursor=cursor,
                include_customer_data=include_customer_data,
            )
        )

    def iter_orders(
        self,
        *,
        service_order_ids: Sequence[str] | None = None,
        order_statuses: Sequence[m.OrderStatus] | None = None,
        updated_since: datetime | None = None,
        from_date: datetime | None = None,
        to_date: datetime | None = None,
        include_customer_data: bool | None = None,
        page_size: int = MAX_PAGE,
    ) -> Paged[m.Order]:
        """Every order matching the filters, following ``NextCursor``. No order comes twice within a walk; start
        the next walk with ``updated_since=walk.state.next_updated_since``."""

        def fetch(cursor: str | None) -> m.OrderPage:
            return self.list_orders(
                service_order_ids=service_order_ids,
                order_statuses=order_statuses,
                updated_since=updated_since,
                from_date=from_date,
                to_date=to_date,
                limit=page_size,
                cursor=cursor,
                include_customer_data=include_customer_data,
            )

        return Paged(order_walk(fetch))

    def get_order(self, order_id: str, *, include_customer_data: bool = False) -> m.Order:
        return self._send(ops.get_order(order_id, include_customer_data=include_customer_data))

    def confirm_orders(
        self, items: Sequence[m.ConfirmItem | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> m.OrderWriteResult:
        """Confirm shipment. The whole batch is validated first. Check ``Warnings`` (P2-P4: stored, not sent)."""
        return self._send(ops.confirm_orders(items, idempotency_key=idempotency_key))

    def cancel_orders(
        self,
        reason: m.CancelReason,
        items: Sequence[m.CancelItem | Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> m.OrderWriteResult:
        return self._send(ops.cancel_orders(reason, items, idempotency_key=idempotency_key))

    def refund_orders(
        self,
        reason: m.RefundReason,
        currency: str,
        items: Sequence[m.RefundItem | Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> m.RefundWriteResult:
        """Refund order items. Always sent with an Idempotency-Key (generated unless given): retried, it refunds
        once. Pass your own key to make your own retries (e.g. after a crash) safe too."""
        return self._send(ops.refund_orders(reason, currency, items, idempotency_key=idempotency_key))

    def update_order(
        self, service_order_id: str, external_reference: str | None, *, idempotency_key: str | None = None
    ) -> m.UpdateOrderResult:
        """Attach (or with None, clear) your own reference on an order. Local bookkeeping only."""
        return self._send(ops.update_order(service_order_id, external_reference, idempotency_key=idempotency_key))

    # --------------------------------------------------------------------------------------------- inventory

    def push_price_quantity(
        self,
        items: Sequence[m.PushItem | Mapping[str, Any]],
        *,
        propagate_to_listings: bool | None = None,
        idempotency_key: str | None = None,
    ) -> m.PushResult:
        """Push 1 to 500 SKUs; a missing Price or Quantity leaves it alone. Per-SKU outcomes are in ``Results``;
        ``Warnings`` carries the Data Flow drift message. With an `idempotency_key` the push is applied once however
        often it is retried (by this client after a lost answer or a 5xx, or by you); without one it is not retried
        once sent, and costs the service nothing more."""
        return self._send(
            ops.push_price_quantity(items, propagate_to_listings=propagate_to_listings, idempotency_key=idempotency_key)
        )

    def list_products(
        self,
        *,
        sku: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        modified_since: datetime | None = None,
    ) -> m.ProductPage:
        return self._send(ops.list_products(sku=sku, limit=limit, offset=offset, modified_since=modified_since))

    def iter_products(self, *, sku: str | None = None, page_size: int = MAX_PAGE) -> Paged[m.ProductSummary]:
        """The catalogue by Offset against TotalCount, in SKU order ignoring case (the spec guarantees no order;
        price and stock changes move no product between pages). Each product comes once, also when products are
        created during the walk; one deleted during it may hide the next page's first. For a resumable walk of
        what changed, without that gap, use `iter_products_modified_since`."""

        def fetch(offset: int) -> tuple[list[m.ProductSummary], int]:
            page = self.list_products(sku=sku, limit=page_size, offset=offset)
            return page.Products, page.TotalCount

        return Paged(offset_walk(fetch, key=_sku))

    def iter_products_modified_since(
        self, since: datetime | None = None, *, page_size: int = MAX_PAGE
    ) -> Paged[m.ProductSummary]:
        """Products changed at or after `since` (all when None), oldest change first, each once per walk unless
        it changes again. ``walk.state.cursor`` is the last LastModifiedDate seen: resume from it."""
        return Paged(
            modified_since_walk(
                lambda bound: self.list_products(modified_since=bound, limit=page_size).Products, since, page_size
            )
        )

    def get_product(self, sku: str) -> m.Product:
        """One product by SKU (case-insensitive); `Conflict` when several differ only by case."""
        return self._send(ops.get_product(sku))

    # --------------------------------------------------------------------------------------------- catalog

    def search_product_types(
        self,
        marketplace_id: str,
        *,
        search_text: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> m.ProductTypePage:
        return self._send(ops.search_product_types(marketplace_id, search_text=search_text, limit=limit, offset=offset))

    def iter_product_types(
        self, marketplace_id: str, *, search_text: str | None = None, page_size: int = MAX_PAGE
    ) -> Paged[m.ProductType]:
        """Every leaf category matching `search_text` (the whole tree when None)."""

        def fetch(offset: int) -> tuple[list[m.ProductType], int]:
            page = self.search_product_types(marketplace_id, search_text=search_text, limit=page_size, offset=offset)
            return page.ProductTypes, page.TotalCount

        return Paged(offset_walk(fetch, key=_category_id))

    def get_product_type_schema(self, marketplace_id: str, category_id: str) -> m.ProductTypeSchema:
        """The attribute schema; fetch it close to the create (its ProductTypeViewId changes on re-imports)."""
        return self._send(ops.get_product_type_schema(marketplace_id, category_id))

    def create_product(
        self,
        sku: str,
        marketplace_id: str,
        *,
        quantity: int | None = None,
        product_type_view_id: str | None = None,
        category_id: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        validate_only: bool | None = None,
        idempotency_key: str | None = None,
    ) -> m.CreateProductResult:
        """Create or update (upsert on SKU) and queue the publish: follow ``JobId`` with `wait_for_job`. Sent
        with an Idempotency-Key (generated unless given)."""
        return self._send(
            ops.create_product(
                sku,
                marketplace_id,
                quantity=quantity,
                product_type_view_id=product_type_view_id,
                category_id=category_id,
                attributes=attributes,
                validate_only=validate_only,
                idempotency_key=idempotency_key,
            )
        )

    # --------------------------------------------------------------------------------------------- marketplaces, jobs

    def list_marketplaces(self) -> list[m.Marketplace]:
        return self._send(ops.list_marketplaces())

    def get_job(self, job_id: str) -> m.Job:
        return self._send(ops.get_job(job_id))

    def wait_for_job(
        self, job_id: str, *, timeout: float = 600.0, poll_s: float = 0.25, max_poll_s: float = 10.0
    ) -> m.Job:
        """Poll until the job is complete and return its final state (check ``IsSuccessful``: a failed job is
        complete too). Backs off from `poll_s` to `max_poll_s`; raises `JobTimeout` after `timeout` seconds."""
        started, delay = time.monotonic(), poll_s
        while True:
            job = self.get_job(job_id)
            if job.IsComplete:
                return job
            waited = time.monotonic() - started
            if waited + delay > timeout:
                raise JobTimeout(job, waited)
            time.sleep(self._poll_delay(delay))
            delay = min(max_poll_s, delay * 2)

    # --------------------------------------------------------------------------------------------- webhooks

    def create_webhook(
        self, url: str, event_types: Sequence[str], *, idempotency_key: str | None = None
    ) -> m.SubscriptionCreated:
        """Subscribe an https URL; ``Subscription.Secret`` is shown this once. Sent with an Idempotency-Key
        (generated unless given): a replay returns the subscription without its Secret, with a warning."""
        return self._send(ops.create_webhook(url, event_types, idempotency_key=idempotency_key))

    def list_webhooks(self) -> list[m.Subscription]:
        return self._send(ops.list_webhooks())

    def delete_webhook(self, subscription_id: str) -> m.DeleteSubscriptionResult:
        return self._send(ops.delete_webhook(subscription_id))

    def send_test_webhook(self, subscription_id: str, event_type: str | None = None) -> m.SentTestEvent:
        """A test event of `event_type` (default: the subscription's first) to this subscription only, signed and
        delivered like any other; its payload names nothing real and is marked (``Delivery.is_test``)."""
        return self._send(ops.send_test_webhook(subscription_id, event_type))


class AsyncClient(_Base):
    """The asyncio client: the same methods as `Client`, as coroutines (iterators are async iterators)."""

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        scopes: Sequence[str] | None = None,
        token_url: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        user_agent: str | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            client_id,
            client_secret,
            base_url=base_url,
            scopes=scopes,
            token_url=token_url,
            timeout=timeout,
            retry=retry,
            user_agent=user_agent,
        )
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._token_lock = asyncio.Lock()

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        return cls(**{**cls.env_settings(), **options})

    async def close(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    # --------------------------------------------------------------------------------------------- plumbing

    async def fetch_token(self) -> m.Token:
        attempt = 0
        while True:
            attempt += 1
            started = self._clock()
            try:
                response = await self._http.post(
                    self.token_url,
                    data=token_form(self.client_id, self._client_secret, self.scopes),
                    headers={"Accept": "application/json", "User-Agent": self.user_agent},
                )
            except httpx.TransportError as error:
                log_attempt("POST", _TOKEN_CALL.path, attempt, started, None, error)
                delay = retry_delay_after_error(self.retry, _TOKEN_CALL, attempt, error)
                if delay is None:
                    raise TransportError(f"token request failed: {error!r}") from error
                await asyncio.sleep(delay)
                continue
            log_attempt("POST", _TOKEN_CALL.path, attempt, started, response, None)
            if response.is_success:
                body = decode_json(response.content)
                self._token = cached_token(body, started)
                self.tokens_fetched += 1
                record(response, attempt)
                return m.Token.model_validate(body)
            delay = retry_delay_after_response(self.retry, _TOKEN_CALL, attempt, response)
            if delay is None or response.status_code < 500:
                raise token_error(response)
            await asyncio.sleep(delay)

    async def with_raw_response(
        self, method: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> RawResponse[T]:
        """`Client.with_raw_response`: ``raw = await api.with_raw_response(api.push_price_quantity, items)``."""
        recorder = ResponseRecorder()
        token = RECORDER.set(recorder)
        try:
            called = method(*args, **kwargs)
            if not inspect.isawaitable(called):  # an async iterator: nothing called yet
                raise nothing_called(getattr(method, "__name__", "the method"))
            parsed = await called
        finally:
            RECORDER.reset(token)
        return recorder.result(parsed, getattr(method, "__name__", "the method"))

    async def _access_token(self) -> str:
        token = self._fresh_token()
        if token is not None:
            return token
        async with self._token_lock:
            token = self._fresh_token()  # a concurrent call may have renewed it meanwhile
            return token if token is not None else (await self.fetch_token()).access_token

    async def _send(self, call: Call[T]) -> T:
        content, url = call.content(), self.base_url + call.path
        attempt, renewed = 0, False
        while True:
            attempt += 1
            token = await self._access_token()
            started = time.monotonic()
            try:
                response = await self._http.request(
                    call.method, url, params=call.params, content=content, headers=self._request_headers(call, token)
                )
            except httpx.TransportError as error:
                log_attempt(call.method, call.path, attempt, started, None, error)
                delay = retry_delay_after_error(self.retry, call, attempt, error)
                if delay is None:
                    raise TransportError(f"{call.method} {call.path} failed: {error!r}") from error
                await asyncio.sleep(delay)
                continue
            log_attempt(call.method, call.path, attempt, started, response, None)
            self._observe(response)
            if response.status_code == 401 and not renewed:
                renewed = True
                attempt -= 1
                self._forget(token)
                continue
            if response.is_success:
                record(response, attempt)
                return self._parse(call, response)
            delay = retry_delay_after_response(self.retry, call, attempt, response)
            if delay is None:
                raise api_error(response)
            await asyncio.sleep(delay)

    # --------------------------------------------------------------------------------------------- orders

    async def list_orders(
        self,
        *,
        service_order_ids: Sequence[str] | None = None,
        order_statuses: Sequence[m.OrderStatus] | None = None,
        updated_since: datetime | None = None,
        from_date: datetime | None = None,
        to_date: datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        include_customer_data: bool | None = None,
    ) -> m.OrderPage:
        return await self._send(
            ops.list_orders(
                service_order_ids=service_order_ids,
                order_statuses=order_statuses,
                updated_since=updated_since,
                from_date=from_date,
                to_date=to_date,
                limit=limit,
                cursor=cursor,
                include_customer_data=include_customer_data,
            )
        )

    def iter_orders(
        self,
        *,
        service_order_ids: Sequence[str] | None = None,
        order_statuses: Sequence[m.OrderStatus] | None = None,
        updated_since: datetime | None = None,
        from_date: datetime | None = None,
        to_date: datetime | None = None,
        include_customer_data: bool | None = None,
        page_size: int = MAX_PAGE,
    ) -> AsyncPaged[m.Order]:
        def fetch(cursor: str | None) -> Awaitable[m.OrderPage]:
            return self.list_orders(
                service_order_ids=service_order_ids,
                order_statuses=order_statuses,
                updated_since=updated_since,
                from_date=from_date,
                to_date=to_date,
                limit=page_size,
                cursor=cursor,
                include_customer_data=include_customer_data,
            )

        return AsyncPaged(async_order_walk(fetch))

    async def get_order(self, order_id: str, *, include_customer_data: bool = False) -> m.Order:
        return await self._send(ops.get_order(order_id, include_customer_data=include_customer_data))

    async def confirm_orders(
        self, items: Sequence[m.ConfirmItem | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> m.OrderWriteResult:
        return await self._send(ops.confirm_orders(items, idempotency_key=idempotency_key))

    async def cancel_orders(
        self,
        reason: m.CancelReason,
        items: Sequence[m.CancelItem | Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> m.OrderWriteResult:
        return await self._send(ops.cancel_orders(reason, items, idempotency_key=idempotency_key))

    async def refund_orders(
        self,
        reason: m.RefundReason,
        currency: str,
        items: Sequence[m.RefundItem | Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> m.RefundWriteResult:
        return await self._send(ops.refund_orders(reason, currency, items, idempotency_key=idempotency_key))

    async def update_order(
        self, service_order_id: str, external_reference: str | None, *, idempotency_key: str | None = None
    ) -> m.UpdateOrderResult:
        return await self._send(ops.update_order(service_order_id, external_reference, idempotency_key=idempotency_key))

    # --------------------------------------------------------------------------------------------- inventory

    async def push_price_quantity(
        self,
        items: Sequence[m.PushItem | Mapping[str, Any]],
        *,
        propagate_to_listings: bool | None = None,
        idempotency_key: str | None = None,
    ) -> m.PushResult:
        return await self._send(
            ops.push_price_quantity(items, propagate_to_listings=propagate_to_listings, idempotency_key=idempotency_key)
        )

    async def list_products(
        self,
        *,
        sku: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        modified_since: datetime | None = None,
    ) -> m.ProductPage:
        return await self._send(ops.list_products(sku=sku, limit=limit, offset=offset, modified_since=modified_since))

    def iter_products(self, *, sku: str | None = None, page_size: int = MAX_PAGE) -> AsyncPaged[m.ProductSummary]:
        async def fetch(offset: int) -> tuple[list[m.ProductSummary], int]:
            page = await self.list_products(sku=sku, limit=page_size, offset=offset)
            return page.Products, page.TotalCount

        return AsyncPaged(async_offset_walk(fetch, key=_sku))

    def iter_products_modified_since(
        self, since: datetime | None = None, *, page_size: int = MAX_PAGE
    ) -> AsyncPaged[m.ProductSummary]:
        async def fetch(bound: datetime) -> list[m.ProductSummary]:
            return (await self.list_products(modified_since=bound, limit=page_size)).Products

        return AsyncPaged(async_modified_since_walk(fetch, since, page_size))

    async def get_product(self, sku: str) -> m.Product:
        return await self._send(ops.get_product(sku))

    # --------------------------------------------------------------------------------------------- catalog

    async def search_product_types(
        self,
        marketplace_id: str,
        *,
        search_text: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> m.ProductTypePage:
        return await self._send(
            ops.search_product_types(marketplace_id, search_text=search_text, limit=limit, offset=offset)
        )

    def iter_product_types(
        self, marketplace_id: str, *, search_text: str | None = None, page_size: int = MAX_PAGE
    ) -> AsyncPaged[m.ProductType]:
        async def fetch(offset: int) -> tuple[list[m.ProductType], int]:
            page = await self.search_product_types(
                marketplace_id, search_text=search_text, limit=page_size, offset=offset
            )
            return page.ProductTypes, page.TotalCount

        return AsyncPaged(async_offset_walk(fetch, key=_category_id))

    async def get_product_type_schema(self, marketplace_id: str, category_id: str) -> m.ProductTypeSchema:
        return await self._send(ops.get_product_type_schema(marketplace_id, category_id))

    async def create_product(
        self,
        sku: str,
        marketplace_id: str,
        *,
        quantity: int | None = None,
        product_type_view_id: str | None = None,
        category_id: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        validate_only: bool | None = None,
        idempotency_key: str | None = None,
    ) -> m.CreateProductResult:
        return await self._send(
            ops.create_product(
                sku,
                marketplace_id,
                quantity=quantity,
                product_type_view_id=product_type_view_id,
                category_id=category_id,
                attributes=attributes,
                validate_only=validate_only,
                idempotency_key=idempotency_key,
            )
        )

    # --------------------------------------------------------------------------------------------- marketplaces, jobs

    async def list_marketplaces(self) -> list[m.Marketplace]:
        return await self._send(ops.list_marketplaces())

    async def get_job(self, job_id: str) -> m.Job:
        return await self._send(ops.get_job(job_id))

    async def wait_for_job(
        self, job_id: str, *, timeout: float = 600.0, poll_s: float = 0.25, max_poll_s: float = 10.0
    ) -> m.Job:
        started, delay = time.monotonic(), poll_s
        while True:
            job = await self.get_job(job_id)
            if job.IsComplete:
                return job
            waited = time.monotonic() - started
            if waited + delay > timeout:
                raise JobTimeout(job, waited)
            await asyncio.sleep(self._poll_delay(delay))
            delay = min(max_poll_s, delay * 2)

    # --------------------------------------------------------------------------------------------- webhooks

    async def create_webhook(
        self, url: str, event_types: Sequence[str], *, idempotency_key: str | None = None
    ) -> m.SubscriptionCreated:
        return await self._send(ops.create_webhook(url, event_types, idempotency_key=idempotency_key))

    async def list_webhooks(self) -> list[m.Subscription]:
        return await self._send(ops.list_webhooks())

    async def delete_webhook(self, subscription_id: str) -> m.DeleteSubscriptionResult:
        return await self._send(ops.delete_webhook(subscription_id))

    async def send_test_webhook(self, subscription_id: str, event_type: str | None = None) -> m.SentTestEvent:
        return await self._send(ops.send_test_webhook(subscription_id, event_type))


def _sku(product: m.ProductSummary) -> str:
    return product.Sku


def _category_id(product_type: m.ProductType) -> str:
    return product_type.CategoryId


# The token request as a Call, so the shared retry policy applies to it (it is safe to repeat).
_TOKEN_CALL: Call[None] = Call("POST", "/connect/token", lambda _body: None, safe=True)

__all__ = ["AsyncClient", "Client"]
