"""What goes wrong under /app is answered with the app's own HTML page, never the API's problem+json: an unknown
address, a method a page does not take, an unexpected error; and a page's query parameters are bounded
(docs/decisions/0314-app-query-bounds.md): too long, too many, unreadable or out of range is a 400 page naming
the parameter, a page past the end of a list says so, and none of them is a 500."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from marketsync.console import pages as console_pages
from marketsync.console.render import MAX_QUERY_PARAMETERS, MAX_QUERY_VALUE
from marketsync.orders.rules import ORDER_STATUSES
from marketsync.people import service as people
from marketsync.runtime import Runtime
from tests.console.support import Browser, assert_app_page, make_person, signed_in
from tests.inventory.support import add_products
from tests.support.factories import make_account


@pytest.fixture
async def owner(rt: Runtime, api: httpx.AsyncClient) -> AsyncIterator[Browser]:
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    yield browser
    await browser.client.aclose()


async def test_an_unknown_app_address_is_the_apps_404_page_and_the_apis_stays_a_problem(
    api: httpx.AsyncClient, owner: Browser
) -> None:
    assert_app_page(await owner.page("/app/no-such-page"), 404, "No such page.")
    assert_app_page(await api.get("/app/static/no-such-file.js"), 404, "No such page.")
    assert_app_page(await owner.page("/app/marketplaces/x/no-such/deeper"), 404)
    problem = await api.get("/api/no-such-operation")
    assert problem.status_code == 404 and problem.headers["content-type"] == "application/problem+json"


async def test_a_method_a_page_does_not_take_is_the_apps_405_page(owner: Browser) -> None:
    response = await owner.client.put("/app/marketplaces")
    assert_app_page(response, 405, "does not take that kind of request")
    assert "GET" in response.headers["allow"]


async def test_an_unexpected_error_is_the_apps_500_page_with_nothing_of_the_error(
    owner: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*_args: object) -> None:
        raise RuntimeError("internal detail: /var/lib/secret-path")

    monkeypatch.setattr(console_pages.inventory, "data_owners", broken)
    response = await owner.page("/app/dataflow")
    assert_app_page(response, 500, "Something went wrong", "Try again in a moment.")
    assert "internal detail" not in response.text and "Traceback" not in response.text
    assert response.headers["x-request-id"] and response.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("/app/catalogue", {"sku": "S" * 201}, "sku"),
        ("/app/catalogue", {"offset": "next"}, "offset"),
        ("/app/catalogue", {"offset": "-1"}, "offset"),
        ("/app/catalogue", {"offset": str(10**30)}, "offset"),  # beyond every database's integer
        ("/app/catalogue", {"offset": "1000001"}, "offset"),
        ("/app/product", {}, "sku"),
        ("/app/product", {"sku": "S" * 201}, "sku"),
        ("/app/orders", {"q": "c" * (MAX_QUERY_VALUE + 1)}, "q"),
        ("/app/orders", {"offset": "not-a-number"}, "offset"),
        ("/app/orders", {"from": "yesterday"}, "From"),
        ("/app/orders", {"sort": "price"}, "sort"),
        ("/app/webhooks", {"count": "many"}, "count"),
        ("/app/webhooks", {"before": "b" * (MAX_QUERY_VALUE + 1)}, "before"),
        ("/app/jobs", {"q" * 60: "v" * (MAX_QUERY_VALUE + 1)}, "q" * 50),
    ],
)
async def test_a_bad_query_parameter_is_a_400_page_naming_it(
    owner: Browser, path: str, params: dict[str, str], named: str
) -> None:
    response = await owner.client.get(path, params=params)
    assert_app_page(response, 400)
    # The error page names it, or the list's own page shows it beside its filter (the API's message).
    assert f"<code>{named}</code>" in response.text or f'id="error-{named}"' in response.text, response.text[-900:]


async def test_too_many_or_too_long_query_parameters_are_refused_before_any_work(owner: Browser) -> None:
    many = [("status", "Unshipped")] * (MAX_QUERY_PARAMETERS + 1)
    assert_app_page(await owner.client.get("/app/orders", params=many), 400, "Too many parameters: at most 30")
    long = [(f"p{index}", "x" * MAX_QUERY_VALUE) for index in range(10)]
    assert_app_page(await owner.client.get("/app/orders", params=long), 400, "The address is too long")
    every_status = [("status", status) for status in ORDER_STATUSES]
    assert (await owner.client.get("/app/orders", params=every_status)).status_code == 200


async def test_a_catalogue_page_past_the_end_says_so(rt: Runtime, owner: Browser) -> None:
    account_id = await _account_of(rt, owner)
    await add_products(rt, account_id, [("MUG-1", "9.50", 4), ("MUG-2", "3.00", 1)])
    past = await owner.client.get("/app/catalogue", params={"offset": "50"})
    assert_app_page(past, 200, "No page starts at product 51: the catalogue has 2.", "First page")
    # A search pages after its last SKU (decision 0336): an offset is no position of it; past its end it says so.
    searched = await owner.client.get("/app/catalogue", params={"sku": "MUG-1", "offset": "1000000"})
    assert_app_page(searched, 200, "MUG-1</a>")
    beyond = await owner.client.get("/app/catalogue", params={"sku": "MUG", "after": "MUG-2"})
    assert_app_page(beyond, 200, "No more products whose SKU starts with this.", "first page")
    first = await owner.page("/app/catalogue")
    assert "MUG-2" in first.text and "No page starts" not in first.text


async def _account_of(rt: Runtime, browser: Browser) -> str:
    person = await people.person_for(rt, str(browser.client.cookies["msc_session"]))
    assert person is not None
    return person.account_id


async def test_a_refused_upload_or_nul_address_is_the_apps_page_and_the_apis_stays_a_problem(
    rt: Runtime, api: httpx.AsyncClient, owner: Browser
) -> None:
    """Refused before or while the body streams in (too large, a NUL character): under /app a person saw raw
    problem+json in the browser."""
    limit = rt.settings.max_body_bytes
    too_large = b"Sku,Price\n" + b"A,1\n" * (limit // 4)
    megabytes = f"{limit / 1048576:.1f} MB"
    declared = await owner.client.post("/app/imports", files={"file": ("big.csv", too_large, "text/csv")})
    assert_app_page(declared, 413, "Too large", megabytes, "choose a smaller file")

    form = (
        b'--x\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n'
        + too_large
        + b"\r\n--x--\r\n"
    )

    async def streamed() -> AsyncIterator[bytes]:  # chunked: no Content-Length to refuse it by
        for start in range(0, len(form), 65536):
            yield form[start : start + 65536]

    chunked = await owner.client.post(
        "/app/imports", content=streamed(), headers={"Content-Type": "multipart/form-data; boundary=x"}
    )
    assert_app_page(chunked, 413, "Too large", megabytes)
    assert_app_page(await owner.page("/app/catalogue?sku=%00"), 400, "NUL character")
    api_refusal = await api.post("/api/products/List", content=b"{" + b" " * limit + b"}")
    assert api_refusal.status_code == 413 and api_refusal.headers["content-type"] == "application/problem+json"
    api_nul = await api.get("/api/products/A?x=%00")
    assert api_nul.status_code == 400 and api_nul.headers["content-type"] == "application/problem+json"
