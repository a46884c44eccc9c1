"""Checking real HTTP exchanges against the service's own OpenAPI document (JSON Schema 2020-12, jsonschema-rs).

Schemas are closed before use (`additionalProperties: false` on every object that lists its properties), so a
field the service sends but the document does not name fails as surely as a missing or mistyped one. Formats
(date-time) are asserted.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import httpx
import jsonschema_rs

Schema = dict[str, Any]
# Present only on some answers of an operation; every other documented header must be on every answer.
OPTIONAL_HEADERS = {"Idempotent-Replayed"}


def closed(node: Any) -> Any:
    if isinstance(node, list):
        return [closed(value) for value in node]
    if not isinstance(node, dict):
        return node
    result = {key: closed(value) for key, value in node.items()}
    if "properties" in result and "additionalProperties" not in result:
        result["additionalProperties"] = False
    return result


def validator(document: Schema, schema: Schema) -> Any:
    """A validator of `schema`, resolving `#/components/...` against the (closed) document."""
    root = {"components": closed(copy.deepcopy(document["components"])), "allOf": [closed(schema)]}
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


def problems(document: Schema, schema: Schema, instance: Any) -> list[str]:
    return [str(error).split("\n\nFailed validating")[0] for error in validator(document, schema).iter_errors(instance)]


def _resolve(document: Schema, node: Schema) -> Schema:
    while "$ref" in node:
        section, name = node["$ref"].removeprefix("#/components/").split("/")
        node = document["components"][section][name]
    return node


@dataclass
class Conformance:
    """Validates exchanges against the document and remembers which (operation, status) pairs it saw."""

    document: Schema
    seen: set[tuple[str, str]] = field(default_factory=set)

    def operation(self, method: str, path: str) -> Schema:
        operation: Schema = self.document["paths"][path][method.lower()]
        return operation

    def check(self, path: str, response: httpx.Response) -> Any:
        """Assert `response` is what the document promises for its request (`path` as the document spells it)."""
        method = response.request.method
        operation = self.operation(method, path)
        status = str(response.status_code)
        where = f"{operation['operationId']} {status}"
        assert status in operation["responses"], f"{where}: status not documented"
        documented = _resolve(self.document, operation["responses"][status])
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        content = documented.get("content", {})
        assert media_type in content, f"{where}: {media_type} not documented (documented: {sorted(content)})"
        body = response.json()
        found = problems(self.document, content[media_type]["schema"], body)
        assert found == [], f"{where}: the body does not match the document: {found}"
        for name, header in documented.get("headers", {}).items():
            if name in OPTIONAL_HEADERS:
                continue
            assert name in response.headers, f"{where}: documented header {name} is missing"
            schema = _resolve(self.document, header)["schema"]
            value: Any = response.headers[name]
            if schema.get("type") == "integer":
                value = int(value)
            assert problems(self.document, schema, value) == [], f"{where}: header {name}={value!r}"
        for name in response.headers:
            documented_names = ("idempotent-replayed", "retry-after", "ratelimit", "ratelimit-policy", "cache-control",
                                "www-authenticate")  # fmt: skip
            if name.lower() in documented_names:
                assert any(h.lower() == name.lower() for h in documented.get("headers", {})), (
                    f"{where}: header {name} is sent but not documented"
                )
        self.seen.add((operation["operationId"], status))
        return body

    def check_request(self, path: str, method: str, body: Any) -> None:
        """Assert a request body the test sends is one the document allows (so the check above is meaningful)."""
        schema = self.operation(method, path)["requestBody"]["content"]["application/json"]["schema"]
        found = problems(self.document, schema, body)
        assert found == [], f"{method} {path}: the request does not match the document: {found}"
