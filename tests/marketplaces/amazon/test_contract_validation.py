"""The contract validator (marketsync/marketplaces/amazon/contracts/validation.py): it refuses what Amazon's models
refuse, accepts what they accept (Amazon's own examples included), and checks feed documents, processing reports and
the LWA token exchange."""

from __future__ import annotations

import json
from typing import Any

import pytest

from marketsync.marketplaces.amazon.contracts import validation
from marketsync.marketplaces.amazon.contracts.validation import (
    ContractViolation,
    feed_document_errors,
    lwa_request_errors,
    lwa_response_errors,
    processing_report_errors,
    spapi_contracts,
    validate_feed_document,
    validate_processing_report,
)

UK = "A1F83G8C2ARO7P"
contracts = spapi_contracts()


def _request(method: str, path: str, query: list[tuple[str, str]], body: Any = None) -> list[str]:
    match = contracts.match(method, path)
    assert match is not None, path
    raw = b"" if body is None else json.dumps(body).encode()
    return contracts.request_errors(match, query, {}, raw, "application/json" if body is not None else None)


def test_a_path_is_matched_to_its_operation_with_encoded_parameters() -> None:
    match = contracts.match("GET", "/listings/2021-08-01/items/A1SELLER/SKU%2F1%20x")
    assert match is not None
    assert match.operation.operation_id == "getListingsItem"
    assert match.path_parameters == {"sellerId": "A1SELLER", "sku": "SKU/1 x"}
    assert contracts.match("GET", "/orders/v0/orders/123-1234567-1234567/orderItems").operation.operation_id == (  # type: ignore[union-attr]
        "getOrderItems"
    )
    assert contracts.match("GET", "/nothing/here") is None


def test_a_valid_get_orders_request_passes() -> None:
    query = [("MarketplaceIds", f"{UK},A1PA6795UKMFR9"), ("LastUpdatedAfter", "2026-01-01T00:00:00Z"),
             ("MaxResultsPerPage", "50")]  # fmt: skip
    assert _request("GET", "/orders/v0/orders", query) == []


@pytest.mark.parametrize(
    ("path", "query", "expected"),
    [
        ("/orders/v0/orders", [("marketplaceIds", UK)], "query parameter marketplaceIds: not a parameter of getOrders"),
        ("/orders/v0/orders", [("CreatedAfter", "2026-01-01")], "query parameter MarketplaceIds: required"),
        ("/orders/v0/orders", [("MarketplaceIds", ",".join([UK] * 51))], "is too long"),
        ("/orders/v0/orders", [("MarketplaceIds", UK), ("MaxResultsPerPage", "many")], "is not of type 'integer'"),
        ("/orders/v0/orders", [("MarketplaceIds", UK), ("MarketplaceIds", UK)], "given 2 times"),
        ("/listings/2021-08-01/items/S1", [("marketplaceIds", UK), ("includedData", "summaries,everything")],
         "'everything' is not one of"),
        ("/listings/2021-08-01/items/S1", [("marketplaceIds", UK), ("lastUpdatedAfter", "yesterday")],
         "is not a 'date-time'"),
        ("/listings/2021-08-01/items/S1", [("marketplaceIds", UK), ("pageSize", "21")], "greater than the maximum"),
    ],
)  # fmt: skip
def test_a_bad_request_is_refused_naming_the_parameter(path: str, query: list[tuple[str, str]], expected: str) -> None:
    errors = _request("GET", path, query)
    assert any(expected in e for e in errors), errors


def test_a_body_is_checked_against_the_operations_schema() -> None:
    path = "/listings/2021-08-01/items/S1/SKU1"
    query = [("marketplaceIds", UK)]
    good = {"productType": "LUGGAGE", "patches": [{"op": "replace", "path": "/attributes/x", "value": [{"a": 1}]}]}
    assert _request("PATCH", path, query, good) == []
    errors = _request("PATCH", path, query, {"productType": "LUGGAGE", "patches": [{"op": "upsert", "path": "/a"}]})
    assert errors == ["body.patches[0].op: 'upsert' is not one of ['add', 'replace', 'merge', 'delete']"]
    assert _request("PATCH", path, query) == ["body: required"]
    match = contracts.match("PATCH", path)
    assert match is not None
    assert contracts.request_errors(match, query, {}, b"{}", "text/plain") == [
        "body: Content-Type 'text/plain' is not application/json"
    ]
    assert _request("GET", "/sellers/v1/marketplaceParticipations", [], {"x": 1}) == [
        "body: this operation takes no body"
    ]


def test_a_response_must_be_declared_and_match_its_schema() -> None:
    op = contracts.operation("getFeed")
    feed = {"feedId": "1", "feedType": "JSON_LISTINGS_FEED", "createdTime": "2026-01-01T00:00:00Z",
            "processingStatus": "DONE"}  # fmt: skip
    assert contracts.response_errors(op, 200, {"x-amzn-RateLimit-Limit": "2"}, feed) == []
    assert contracts.response_errors(op, 200, {}, {**feed, "processingStatus": "FINISHED"}) == [
        "body.processingStatus: 'FINISHED' is not one of ['CANCELLED', 'DONE', 'FATAL', 'IN_PROGRESS', 'IN_QUEUE']"
    ]
    assert contracts.response_errors(op, 200, {}, {**feed, "createdTime": "today"}) == [
        "body.createdTime: 'today' is not a 'date-time'"
    ]
    assert contracts.response_errors(contracts.operation("getOrders"), 401, {}, {"errors": []}) == [
        "status 401: not a response of getOrders"
    ]
    assert contracts.response_errors(contracts.operation("cancelFeed"), 200, {}, None) == []


# Examples in Amazon's models that do not match Amazon's own schemas (their sandbox data): known, not ours to fix.
KNOWN_BAD_EXAMPLES = {("getMarketplaceParticipations", "200"), ("getAccount", "200"), ("getOrderItemsBuyerInfo", "200")}


def test_amazons_own_examples_pass_the_validator() -> None:
    checked = 0
    for op in contracts.operations:
        for status, response in op.responses.items():
            if (op.operation_id, status) in KNOWN_BAD_EXAMPLES or not status.isdigit() or "schema" not in response:
                continue
            sandbox = response.get("x-amzn-api-sandbox") or {}
            examples = [
                e["response"] for kind in ("static", "dynamic") for e in sandbox.get(kind, []) if "response" in e
            ]
            examples += list((response.get("examples") or {}).values())
            for example in examples:
                assert contracts.response_errors(op, int(status), {}, example) == [], (op.operation_id, status)
                checked += 1
    assert checked > 80


def test_published_default_rates_are_read_from_the_models() -> None:
    rates = {name: contracts.operation(name).default_rate() for name in (
        "getOrders", "getOrderItems", "createFeed", "getFeed", "createFeedDocument", "getFeedDocument",
        "putListingsItem", "searchListingsItems", "getMarketplaceParticipations", "createRestrictedDataToken",
        "searchDefinitionsProductTypes", "getDefinitionsProductType",
    )}  # fmt: skip
    assert rates == {
        "getOrders": (0.0167, 20), "getOrderItems": (0.5, 30), "createFeed": (0.0083, 15), "getFeed": (2.0, 15),
        "createFeedDocument": (0.5, 15), "getFeedDocument": (0.0222, 10), "putListingsItem": (5.0, 10),
        "searchListingsItems": (5.0, 5), "getMarketplaceParticipations": (0.016, 15),
        "createRestrictedDataToken": (1.0, 10), "searchDefinitionsProductTypes": (5.0, 10),
        "getDefinitionsProductType": (5.0, 10),
    }  # fmt: skip


def _example(name: str) -> Any:
    return json.loads((validation.SCHEMAS_DIR / name).read_bytes())


def test_feed_documents_are_checked_against_the_listings_feed_schema() -> None:
    example = _example("listings-feed-schema-v2.example.json")
    assert feed_document_errors(example) == []
    validate_feed_document(example)
    broken = json.loads(json.dumps(example))
    broken["header"]["version"] = "1.0"
    broken["messages"][3]["patches"][0]["op"] = "upsert"
    del broken["messages"][1]["sku"]
    errors = feed_document_errors(broken)
    assert "feed.header.version: '2.0' was expected" in errors
    assert "feed.messages[1] message: 'sku' is a required property" in errors
    assert any(e.startswith("feed.messages[3] message.patches[0].op: 'upsert' is not one of") for e in errors)
    with pytest.raises(ContractViolation) as raised:
        validate_feed_document(broken)
    assert raised.value.errors == errors
    # A PATCH message may not carry attributes (the message schema's oneOf)
    patch = {"messageId": 1, "sku": "A", "operationType": "PATCH", "productType": "LUGGAGE", "attributes": {"a": 1},
             "patches": [{"op": "delete", "path": "/attributes/a"}]}  # fmt: skip
    assert validation.feed_message_errors(patch) != []


def test_processing_reports_are_checked_against_their_schema() -> None:
    example = _example("listings-feed-processing-report-schema-v2.example.json")
    assert processing_report_errors(example) == []
    validate_processing_report(example)
    example["summary"]["messagesAccepted"] = -1
    example["issues"][0]["severity"] = "FATAL"
    with pytest.raises(ContractViolation, match="messagesAccepted"):
        validate_processing_report(example)
    assert len(processing_report_errors(example)) == 2


def test_the_lwa_token_exchange_is_checked_against_its_schemas() -> None:
    refresh = [("grant_type", "refresh_token"), ("refresh_token", "Atzr|x"), ("client_id", "c"), ("client_secret", "s")]
    assert lwa_request_errors(refresh) == []
    code = [("grant_type", "authorization_code"), ("code", "ANDa"), ("redirect_uri", "https://x/cb"),
            ("client_id", "c"), ("client_secret", "s")]  # fmt: skip
    assert lwa_request_errors(code) == []
    assert lwa_request_errors(code[:1] + code[2:]) == ["form: 'code' is a required property"]
    assert lwa_request_errors([*refresh, ("scope", "x")]) != []
    assert lwa_request_errors([*refresh, ("client_id", "d")]) == ["form field client_id: given more than once"]
    assert lwa_response_errors(200, {"access_token": "Atza|a", "token_type": "bearer", "expires_in": 3600}) == []
    assert lwa_response_errors(200, {"access_token": "Atza|a", "token_type": "Bearer", "expires_in": 3600}) != []
    assert lwa_response_errors(400, {"error": "invalid_grant", "error_description": "x"}) == []
    assert lwa_response_errors(400, {"error": "denied", "error_description": "x"}) != []
    assert lwa_response_errors(302, {}) == ["status 302: not an answer of the LWA token endpoint"]
