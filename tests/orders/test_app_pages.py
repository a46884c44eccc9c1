"""The app's orders over real HTTP: an order's page, and customer data shown only behind an explicit reveal (a form
post with the CSRF token), never logged. The table of orders: test_app_table.py."""

from __future__ import annotations

import re

import httpx
from structlog.testing import capture_logs

from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.orders.support import BUYER_EMAIL, BUYER_NAME, STREET, ingest, pulled_order, tenant_with


async def test_customer_data_is_shown_only_after_an_explicit_reveal_and_never_logged(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await tenant_with(rt, api, "P1")
    await ingest(rt, tenant.marketplace("P1"), pulled_order(order_id="MO-REVEAL"))
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    listing = await person.page("/app/orders")
    order_path = re.search(r'href="(/app/orders/[0-9A-Z]+)"', listing.text).group(1)  # type: ignore[union-attr]

    order = await person.page(order_path)
    assert "MO-REVEAL" in order.text and "Reveal customer data" in order.text
    assert BUYER_NAME not in order.text and BUYER_EMAIL not in order.text and STREET not in order.text
    assert order.headers["cache-control"] == "no-store"

    forged = await person.client.post(f"{order_path}/reveal", data={"csrf": "not-the-token"})
    assert forged.status_code == 403 and BUYER_NAME not in forged.text

    with capture_logs() as logs:
        revealed = await person.post(f"{order_path}/reveal", csrf_from=order_path)
    assert revealed.status_code == 200 and BUYER_NAME in revealed.text and STREET in revealed.text
    assert revealed.headers["cache-control"] == "no-store"
    assert [entry["event"] for entry in logs if entry["event"] == "order_customer_revealed"]
    logged = repr(logs)
    assert BUYER_NAME not in logged and BUYER_EMAIL not in logged and STREET not in logged
    hide = re.search(r'href="([^"]+)" id="hide-customer"', revealed.text)  # a GET: a reload would reveal again
    assert hide is not None and hide.group(1) == order_path
    assert BUYER_NAME not in (await person.page(order_path)).text  # hidden again on the next view
    await person.client.aclose()


async def test_another_accounts_order_is_not_found(rt: Runtime, api: httpx.AsyncClient) -> None:
    theirs = await tenant_with(rt, api, "P1")
    await ingest(rt, theirs.marketplace("P1"), pulled_order(order_id="MO-THEIRS"))
    owner = await signed_in(api, await make_person(rt, theirs.account_id))
    path = re.search(r'href="(/app/orders/[0-9A-Z]+)"', (await owner.page("/app/orders")).text).group(1)  # type: ignore[union-attr]
    me = await signed_in(api, await make_person(rt, (await tenant_with(rt, api)).account_id))
    assert (await me.page(path)).status_code == 404
    assert (await me.post(f"{path}/reveal", csrf_from="/app/orders")).status_code == 404
    assert "MO-THEIRS" not in (await me.page("/app/orders")).text
    await owner.client.aclose()
    await me.client.aclose()
