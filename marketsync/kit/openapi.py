"""OpenAPI helpers for endpoints that read their body by hand (strict or lenient parsing) but still document it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema with its $defs inlined, for an OpenAPI requestBody given by hand."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def request_body(model: type[BaseModel], *, required: bool = True) -> dict[str, Any]:
    """`openapi_extra` documenting a body the endpoint reads itself (marketsync.http.bodies)."""
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": inline_schema(model)}}}}
