"""The one reader of JSON request bodies: every `/api` route answers the same bad body the same way.

The middleware answers before the body is read: over the size limit is a 413, a body that is not
`application/json` a 415. Everything else a body can get wrong is found here, each a 400 `validation-failed`:

| the body | errors |
|---|---|
| empty or only white space (where a field is required) | `body: Required.` (otherwise read as `{}`) |
| not UTF-8 | `body: The body is not valid UTF-8.` |
| not JSON, `NaN`/`Infinity`, nesting deeper than the parser's stack | `body: The body is not valid JSON.` |
| JSON, but not an object | `body: The body must be a JSON object.` |
| a key twice in one object | the key's path (`Items[2].Price`): `Given more than once.` |
| a string with a lone surrogate (`"\\ud800"`) | `body: Strings must be valid Unicode text (no lone surrogates).` |
| unknown fields | each field's path: `Unknown field; field names are case-exact.` (docs/decisions/0008) |

A duplicate key is refused rather than read as its last value: two parsers (a proxy, a signature check, the
caller's own log) may read it differently, and the caller meant one of the two.

`read_body` gives the parsed object (exact decimals on request), for routes that check their fields by hand;
`StrictRequest` is the base of every request model (strict JSON types, unknown fields refused), read with
`Model.read(raw)`, or with `Model.check(raw)` where the operation has checks of its own beyond the body's shape
(an address, an existing id, a cursor): those still run on every field that is valid on its own, and
`Checked.refuse` raises one 400 naming the shape errors and their problems together (spec section 7: one 400
names every bad field; docs/decisions/0344).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import Annotated, Any, Generic, NoReturn, Self, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from marketsync.http.errors import ValidationFailed, field_key, merged_errors, validation_errors

REQUIRED = "Required."
NOT_UTF8 = "The body is not valid UTF-8."
NOT_JSON = "The body is not valid JSON."
NOT_AN_OBJECT = "The body must be a JSON object."
DUPLICATE_KEY = "Given more than once."
LONE_SURROGATE = "Strings must be valid Unicode text (no lone surrogates)."


class _Duplicated(dict[str, Any]):
    """An object in which at least one key was given twice (the last value kept, as `dict` would)."""

    def __init__(self, pairs: list[tuple[str, Any]], repeated: list[str]) -> None:
        super().__init__(pairs)
        self.pairs = pairs  # every value, the ones `dict` drops included: their own repeats are named too
        self.repeated = repeated


class _Found:
    """Whether the parse met a duplicate key, so a clean body (nearly all) is never walked."""

    def __init__(self) -> None:
        self.duplicates = False

    def object_of(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) == len(pairs):
            return value
        self.duplicates = True
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        return _Duplicated(pairs, repeated)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _duplicate_paths(value: Any, path: list[str | int], found: dict[str, list[str]]) -> None:
    if isinstance(value, _Duplicated):
        for key in value.repeated:
            found[field_key([*path, key])] = [DUPLICATE_KEY]
        for key, item in value.pairs:
            _duplicate_paths(item, [*path, key], found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _duplicate_paths(item, [*path, key], found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _duplicate_paths(item, [*path, index], found)


def _is_unicode_text(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_is_unicode_text(k) and _is_unicode_text(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_unicode_text(item) for item in value)
    return True


def read_body(raw: bytes, *, optional: bool = False, exact_decimals: bool = False) -> dict[str, Any]:
    """The body as a JSON object, or a 400 saying what is wrong with it (see the module's table).

    `optional`: no body (or only white space) is `{}`. `exact_decimals`: numbers with a fraction or an exponent
    are `Decimal`, never a binary float (prices)."""
    if not raw.strip():
        if optional:
            return {}
        raise ValidationFailed(errors={"body": [REQUIRED]})
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationFailed(errors={"body": [NOT_UTF8]}) from None
    found = _Found()
    try:
        data = json.loads(
            text,
            parse_float=Decimal if exact_decimals else float,
            parse_constant=_reject_constant,
            object_pairs_hook=found.object_of,
        )
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
        raise ValidationFailed(errors={"body": [NOT_JSON]}) from None
    if not isinstance(data, dict):
        raise ValidationFailed(errors={"body": [NOT_AN_OBJECT]})
    if found.duplicates:
        duplicates: dict[str, list[str]] = {}
        _duplicate_paths(data, [], duplicates)
        raise ValidationFailed(errors=duplicates)
    # The parser accepts an escaped lone surrogate ("\ud800"), which no UTF-8 text (nor the database) can hold;
    # only an escape can produce one, so bodies without `\u` skip the walk.
    if "\\u" in text and not _is_unicode_text(data):
        raise ValidationFailed(errors={"body": [LONE_SURROGATE]})
    return data


class NullIsDefault:
    """JSON null is the omitted field, i.e. its default (spec §4: request fields are optional unless stated; a
    client that serialises unset fields as null means "not given"; docs/decisions/0326). Placed after the
    constraints: `Annotated[int, Field(ge=1), NullIsDefault(50)] = 50`. The model keeps the plain type; the
    document says `anyOf [type, null]` with the default."""

    def __init__(self, default: Any) -> None:
        self.default = default

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        default = self.default
        return core_schema.no_info_before_validator_function(
            lambda value: default if value is None else value, handler(source)
        )

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"anyOf": [handler(schema), {"type": "null"}]}


class StrictRequest(BaseModel):
    """A request body: strict JSON types (`Limit: "5"` and `Limit: true` are refused, not coerced), unknown
    fields refused (0008), read by `read` so a bad body gets the same 400 on every route."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @classmethod
    def read(cls, raw: bytes, *, optional: bool = False) -> Self:
        """The validated request, or one 400 naming every bad field. `optional`: no body means `{}`."""
        read_body(raw, optional=optional)
        try:
            # From the bytes, in JSON mode: strict then means the JSON types (parsed data would meet Python's rules).
            # Parsed twice, but these bodies are small; the push, the one large body, checks its fields by hand.
            return cls.model_validate_json(raw if raw.strip() else b"{}")
        except ValidationError as exc:
            raise ValidationFailed(errors=validation_errors(exc.errors())) from None

    @classmethod
    def check(cls, raw: bytes, *, optional: bool = False, skip: str = "") -> Checked[Self]:
        """The body read leniently: every shape error, and each top-level field that is valid on its own, so the
        operation's own checks still run on those. A body that is not one JSON object is refused whole, as `read`
        refuses it. `skip`: a field left out of `fields` (a batch whose entries the caller reads one by one)."""
        data = read_body(raw, optional=optional)
        try:
            request = cls.model_validate_json(raw if raw.strip() else b"{}")
        except ValidationError as exc:
            return Checked(None, validation_errors(exc.errors()), valid_fields(cls, data, skip=skip))
        return Checked(request, {})


RequestT = TypeVar("RequestT", bound=BaseModel)


@dataclass(frozen=True)
class Checked(Generic[RequestT]):
    """A request body read leniently (`StrictRequest.check`).

    `request` is the validated request when the body has no shape error. Otherwise `errors` names every shape
    error and `fields` holds the top-level fields that are valid on their own (absent optional ones at their
    default): a check that needs a field which failed its shape is skipped, every other one still runs."""

    request: RequestT | None
    errors: dict[str, list[str]]
    valid_when_refused: dict[str, Any] = field(default_factory=dict)

    @property
    def fields(self) -> dict[str, Any]:
        return dict(self.request) if self.request is not None else self.valid_when_refused

    def refuse(self, *problems: Mapping[str, Sequence[str]]) -> None:
        """One 400 naming the shape errors and every problem the operation's checks found, if there is any."""
        errors = merged_errors(self.errors, *problems)
        if errors:
            raise ValidationFailed(errors=errors)

    def valid(self, *problems: Mapping[str, Sequence[str]]) -> RequestT:
        """The validated request; or the one 400 of `refuse`."""
        self.refuse(*problems)
        assert self.request is not None  # no shape error, so the model validated
        return self.request


def valid_fields(model: type[BaseModel], data: Mapping[str, Any], skip: str = "") -> dict[str, Any]:
    """The fields of `data` that `model` accepts, each validated on its own (strict, as JSON)."""
    valid: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name == skip:
            continue
        if name not in data:
            if not info.is_required():
                valid[name] = info.get_default(call_default_factory=True)
            continue
        try:
            # Re-encoded from the parsed value: exact for every value a caller would send; only the
            # extra digits of a number beyond double precision are lost, and nothing is written from it.
            valid[name] = _field_adapter(model, name).validate_json(orjson.dumps(data[name]))
        except (ValidationError, orjson.JSONEncodeError):
            continue
    return valid


@cache
def _field_adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    info = model.model_fields[name]
    annotated: Any = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    return TypeAdapter(annotated, config=ConfigDict(strict=True))
