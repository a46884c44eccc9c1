"""Requests, responses and feed documents checked against Amazon's published contracts, by a validator library.

The Selling Partner API models beside this file are Swagger 2.0: their schemas are JSON Schema draft 4 (plus
annotations a draft-4 validator ignores), so `jsonschema`'s Draft4Validator checks them as they are, with a
`referencing` registry that resolves each model's `#/definitions/...` inside that model. A Swagger parameter is not a
schema object but carries the same keywords (type, items, enum, maxItems, format...): after a query string value is
split (collectionFormat, csv by default) and typed, the parameter itself is handed to the validator as its schema.
The feed documents and processing reports have their own JSON Schemas (draft 7).

Login with Amazon is not in the models: its token request and answers are checked against the small schemas below,
written from Amazon's LWA documentation (docs/decisions/0360).

Everything here returns the list of what is wrong ([] when nothing is); `validate_*` raise ContractViolation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema_rs
from jsonschema import Draft4Validator, Draft7Validator
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

CONTRACTS_DIR = Path(__file__).parent
MODELS_DIR = CONTRACTS_DIR / "models"
SCHEMAS_DIR = CONTRACTS_DIR / "schemas"

FEED_SCHEMA = "listings-feed-schema-v2.json"
FEED_MESSAGE_SCHEMA = "listings-feed-message-schema-v2.json"
PROCESSING_REPORT_SCHEMA = "listings-feed-processing-report-schema-v2.json"

_HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
# Swagger 2.0 collectionFormat -> separator inside one query value ("multi" repeats the parameter instead).
_SEPARATORS = {"csv": ",", "ssv": " ", "tsv": "\t", "pipes": "|"}
# A usage plan table in an operation's description: "| Rate (requests per second) | Burst |" then "| 0.5 | 30 |", or
# the newer "| Plan type | Rate ... | Burst |" then "|Default| 5 | 10 |".
_USAGE_PLAN = re.compile(r"\|\s*(?:Default\s*\|\s*)?(\d+(?:\.\d+)?)\s*\|\s*(\d+)\s*\|")


class ContractViolation(ValueError):
    """What was checked broke Amazon's published contract; `errors` names every problem."""

    def __init__(self, what: str, errors: Sequence[str]) -> None:
        super().__init__(f"{what}: " + "; ".join(errors))
        self.what = what
        self.errors = list(errors)


@dataclass(frozen=True)
class Operation:
    """One operation of one model: where it lives in the model, so its schemas are resolved in place."""

    model: str
    operation_id: str
    method: str  # upper case
    path: str  # the model's template, e.g. /orders/v0/orders/{orderId}
    pointer: str  # JSON pointer of the operation object inside the model
    parameters: tuple[dict[str, Any], ...]
    responses: Mapping[str, Any]
    description: str = field(repr=False, default="")
    _pattern: re.Pattern[str] = field(repr=False, default=re.compile(""))

    @property
    def body_parameter(self) -> tuple[int, dict[str, Any]] | None:
        for index, parameter in enumerate(self.parameters):
            if parameter.get("in") == "body":
                return index, parameter
        return None

    def default_rate(self) -> tuple[float, int] | None:
        """Amazon's published default usage plan (requests per second, burst), read from the model's description."""
        table = self.description.split("Burst", 1)
        if len(table) < 2:
            return None
        found = _USAGE_PLAN.search(table[1])
        return (float(found.group(1)), int(found.group(2))) if found else None


@dataclass(frozen=True)
class Match:
    operation: Operation
    path_parameters: dict[str, str]


def _pointer_token(text: str) -> str:
    return text.replace("~", "~0").replace("/", "~1")


def _where(error: ValidationError, prefix: str) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{prefix}{path}: {error.message}"


def _errors(validator: Validator, instance: Any, prefix: str) -> list[str]:
    found = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    return [_where(error, prefix) for error in found]


def _load(path: Path) -> Any:
    return json.loads(path.read_bytes())


class SpApiContracts:
    """Every operation of the vendored Selling Partner API models, matched by method and path."""

    def __init__(self, models_dir: Path = MODELS_DIR) -> None:
        resources: list[tuple[str, Resource[Any]]] = []
        operations: list[Operation] = []
        for model_path in sorted(models_dir.glob("*.json")):
            model_name = model_path.stem
            document = _load(model_path)
            resources.append((self._uri(model_name), DRAFT4.create_resource(document)))
            for template, item in document.get("paths", {}).items():
                shared = item.get("parameters", [])
                for method in _HTTP_METHODS:
                    if method not in item:
                        continue
                    op = item[method]
                    parameters = {(p["in"], p["name"]): p for p in shared}
                    parameters.update({(p["in"], p["name"]): p for p in op.get("parameters", [])})
                    regex = re.sub(r"\\\{([^}]+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
                    operations.append(
                        Operation(
                            model=model_name,
                            operation_id=op["operationId"],
                            method=method.upper(),
                            path=template,
                            pointer=f"/paths/{_pointer_token(template)}/{method}",
                            parameters=tuple(parameters.values()),
                            responses=op.get("responses", {}),
                            description=op.get("description", ""),
                            _pattern=re.compile(regex + "$"),
                        )
                    )
        self.registry: Registry[Any] = Registry().with_resources(resources)
        # Literal segments first, so a fixed path is never taken by a template beside it.
        self.operations = sorted(operations, key=lambda o: -len(re.sub(r"\{[^}]+\}", "", o.path)))
        self._validators: dict[tuple[str, str], Validator] = {}

    @staticmethod
    def _uri(model: str) -> str:
        return f"urn:amazon-sp-api:{model}"

    def operation(self, operation_id: str, model: str | None = None) -> Operation:
        for op in self.operations:
            if op.operation_id == operation_id and (model is None or op.model == model):
                return op
        raise KeyError(operation_id)

    def match(self, method: str, raw_path: str) -> Match | None:
        """The operation for a method and a path as sent (percent-encoded: a SKU may hold an encoded slash)."""
        for op in self.operations:
            if op.method != method.upper():
                continue
            found = op._pattern.match(raw_path)
            if found:
                return Match(op, {name: unquote(value) for name, value in found.groupdict().items()})
        return None

    def _validator(self, model: str, pointer: str) -> Validator:
        key = (model, pointer)
        validator = self._validators.get(key)
        if validator is None:
            schema = {"$ref": f"{self._uri(model)}#{pointer}"}
            validator = Draft4Validator(schema, registry=self.registry, format_checker=Draft4Validator.FORMAT_CHECKER)
            self._validators[key] = validator
        return validator

    def request_errors(
        self,
        match: Match,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: bytes,
        content_type: str | None,
    ) -> list[str]:
        """Path, query and header parameters, and the JSON body, against the matched operation."""
        op = match.operation
        errors: list[str] = []
        given: dict[str, list[str]] = {}
        for name, value in query:
            given.setdefault(name, []).append(value)
        declared_query = {p["name"] for p in op.parameters if p.get("in") == "query"}
        for name in sorted(set(given) - declared_query):
            errors.append(f"query parameter {name}: not a parameter of {op.operation_id}")
        lower_headers = {k.lower(): v for k, v in headers.items()}
        for parameter in op.parameters:
            location, name = parameter.get("in"), parameter.get("name", "")
            if location == "body":
                continue
            if location == "path":
                raw: list[str] | None = [match.path_parameters[name]] if name in match.path_parameters else None
            elif location == "query":
                raw = given.get(name)
            elif location == "header":
                raw = [lower_headers[name.lower()]] if name.lower() in lower_headers else None
            else:  # formData: no SP-API operation of these models takes a form
                continue
            if raw is None:
                if parameter.get("required"):
                    errors.append(f"{location} parameter {name}: required")
                continue
            value, problem = _typed(parameter, raw)
            if problem:
                errors.append(f"{location} parameter {name}: {problem}")
                continue
            errors += _errors(self._parameter_validator(op, parameter), value, f"{location} parameter {name}")
        errors += self._body_errors(op, body, content_type)
        return errors

    def _parameter_validator(self, op: Operation, parameter: dict[str, Any]) -> Validator:
        key = (op.model, f"{op.pointer}#parameter:{parameter['in']}:{parameter['name']}")
        validator = self._validators.get(key)
        if validator is None:
            # The parameter object is the schema: its own keywords (type, items, enum, maxItems, format, maximum...).
            schema = {k: v for k, v in parameter.items() if k not in ("name", "in", "required", "description")}
            validator = Draft4Validator(schema, registry=self.registry, format_checker=Draft4Validator.FORMAT_CHECKER)
            self._validators[key] = validator
        return validator

    def _body_errors(self, op: Operation, body: bytes, content_type: str | None) -> list[str]:
        found = op.body_parameter
        if found is None:
            return ["body: this operation takes no body"] if body.strip() else []
        index, parameter = found
        if not body.strip():
            return ["body: required"] if parameter.get("required") else []
        if content_type is None or "application/json" not in content_type.lower():
            return [f"body: Content-Type {content_type!r} is not application/json"]
        try:
            document = json.loads(body)
        except ValueError as exc:
            return [f"body: not JSON ({exc})"]
        return _errors(self._validator(op.model, f"{op.pointer}/parameters/{index}/schema"), document, "body")

    def response_errors(self, operation: Operation, status: int, headers: Mapping[str, str], body: Any) -> list[str]:
        """A response (status, headers, body already parsed from JSON, or None for none) against the operation."""
        key = str(status) if str(status) in operation.responses else "default"
        declared = operation.responses.get(key)
        if declared is None:
            return [f"status {status}: not a response of {operation.operation_id}"]
        errors: list[str] = []
        lower_headers = {k.lower(): v for k, v in headers.items()}
        for name, spec in declared.get("headers", {}).items():
            if name.lower() in lower_headers and spec.get("type") == "string":
                continue  # every header arrives as text; the models declare only string headers
            if name.lower() in lower_headers:
                _, problem = _typed(spec, [lower_headers[name.lower()]])
                errors += [f"header {name}: {problem}"] if problem else []
        if "schema" not in declared:
            return errors + (["body: this response has no body"] if body is not None else [])
        if body is None:
            return [*errors, "body: required"]
        pointer = f"{operation.pointer}/responses/{_pointer_token(key)}/schema"
        return errors + _errors(self._validator(operation.model, pointer), body, "body")


def _typed(parameter: Mapping[str, Any], raw: list[str]) -> tuple[Any, str | None]:
    """Query text as the JSON value the parameter's schema describes (a value that cannot be typed stays text, and
    the schema says so)."""
    if parameter.get("type") == "array":
        collection = parameter.get("collectionFormat", "csv")
        if collection == "multi":
            items = raw
        else:
            if len(raw) > 1:
                return None, f"given {len(raw)} times; collectionFormat {collection} takes one value"
            items = raw[0].split(_SEPARATORS.get(collection, ","))
        return [_scalar(parameter.get("items", {}), item) for item in items], None
    if len(raw) > 1:
        return None, f"given {len(raw)} times"
    return _scalar(parameter, raw[0]), None


def _scalar(spec: Mapping[str, Any], text: str) -> Any:
    kind = spec.get("type")
    if kind == "integer" and re.fullmatch(r"-?\d+", text):
        return int(text)
    if kind == "number" and re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", text):
        return float(text)
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


@cache
def spapi_contracts() -> SpApiContracts:
    """The models are read once per process (~0.8 MB of JSON)."""
    return SpApiContracts()


@cache
def _document_validator(name: str) -> Validator:
    return Draft7Validator(_load(SCHEMAS_DIR / name), format_checker=Draft7Validator.FORMAT_CHECKER)


def feed_message_errors(message: Any) -> list[str]:
    """One feed message against listings-feed-message-schema-v2.json."""
    return _errors(_document_validator(FEED_MESSAGE_SCHEMA), message, "message")


@cache
def _fast_validator(name: str) -> Any:
    return jsonschema_rs.validator_for(_load(SCHEMAS_DIR / name))


def feed_document_errors(document: Any) -> list[str]:
    """A JSON_LISTINGS_FEED document against listings-feed-schema-v2.json, and each message against the message
    schema too (the feed schema carries its own copy of it). A valid document is confirmed by jsonschema-rs (a 500-
    message feed in a few ms, where jsonschema takes ~0.5 s); an invalid one is explained by jsonschema."""
    messages = document.get("messages") if isinstance(document, dict) else None
    if _fast_validator(FEED_SCHEMA).is_valid(document) and all(
        _fast_validator(FEED_MESSAGE_SCHEMA).is_valid(m) for m in (messages if isinstance(messages, list) else [])
    ):
        return []
    errors = _errors(_document_validator(FEED_SCHEMA), document, "feed")
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        errors += [f"feed.messages[{index}] {e}" for e in feed_message_errors(message)]
    return errors


def processing_report_errors(report: Any) -> list[str]:
    """A feed processing report against listings-feed-processing-report-schema-v2.json."""
    if _fast_validator(PROCESSING_REPORT_SCHEMA).is_valid(report):
        return []
    return _errors(_document_validator(PROCESSING_REPORT_SCHEMA), report, "report")


def validate_feed_document(document: Any) -> None:
    _raise_if("feed document", feed_document_errors(document))


def validate_processing_report(report: Any) -> None:
    _raise_if("processing report", processing_report_errors(report))


def _raise_if(what: str, errors: Iterable[str]) -> None:
    errors = list(errors)
    if errors:
        raise ContractViolation(what, errors)


# Login with Amazon's token endpoint (POST /auth/o2/token, application/x-www-form-urlencoded). Not in Amazon's models:
# written from the LWA and SP-API authorisation guides (docs/decisions/0360). Fields are form text.
_TEXT = {"type": "string", "minLength": 1}
_HAS_SCOPE = {"required": ["scope"]}
LWA_TOKEN_REQUEST_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Login with Amazon token request",
    "type": "object",
    "required": ["grant_type", "client_id", "client_secret"],
    "properties": {
        "grant_type": {"enum": ["authorization_code", "refresh_token", "client_credentials"]},
        "code": _TEXT,
        "redirect_uri": _TEXT,
        "refresh_token": _TEXT,
        "scope": _TEXT,
        "client_id": _TEXT,
        "client_secret": _TEXT,
    },
    "additionalProperties": False,
    "allOf": [
        {
            "if": {"properties": {"grant_type": {"const": "authorization_code"}}},
            "then": {"required": ["code"], "not": {"anyOf": [{"required": ["refresh_token"]}, _HAS_SCOPE]}},
        },
        {
            "if": {"properties": {"grant_type": {"const": "refresh_token"}}},
            "then": {"required": ["refresh_token"], "not": {"anyOf": [{"required": ["code"]}, _HAS_SCOPE]}},
        },
        {
            "if": {"properties": {"grant_type": {"const": "client_credentials"}}},
            "then": {"required": ["scope"]},
        },
    ],
}
LWA_TOKEN_RESPONSE_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Login with Amazon token response",
    "type": "object",
    "required": ["access_token", "token_type", "expires_in"],
    "properties": {
        "access_token": {"type": "string", "pattern": "^Atza\\|"},
        "refresh_token": {"type": "string", "pattern": "^Atzr\\|"},
        "token_type": {"const": "bearer"},
        "expires_in": {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}
LWA_ERROR_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Login with Amazon error (RFC 6749 section 5.2)",
    "type": "object",
    "required": ["error", "error_description"],
    "properties": {
        "error": {
            "enum": [
                "invalid_request",
                "invalid_client",
                "invalid_grant",
                "unauthorized_client",
                "unsupported_grant_type",
                "invalid_scope",
                "server_error",
                "temporarily_unavailable",
            ]
        },
        "error_description": {"type": "string"},
    },
    "additionalProperties": False,
}


def lwa_request_errors(form: Sequence[tuple[str, str]]) -> list[str]:
    """The token request's form fields (each at most once) against LWA_TOKEN_REQUEST_SCHEMA."""
    fields: dict[str, str] = {}
    errors: list[str] = []
    for name, value in form:
        if name in fields:
            errors.append(f"form field {name}: given more than once")
        fields[name] = value
    return errors + _errors(Draft7Validator(LWA_TOKEN_REQUEST_SCHEMA), fields, "form")


def lwa_response_errors(status: int, body: Any) -> list[str]:
    """200 with a token, 400/401 (and 5xx) with an error object."""
    if status == 200:
        return _errors(Draft7Validator(LWA_TOKEN_RESPONSE_SCHEMA), body, "body")
    if status in (400, 401, 500, 503):
        return _errors(Draft7Validator(LWA_ERROR_SCHEMA), body, "body")
    return [f"status {status}: not an answer of the LWA token endpoint"]
