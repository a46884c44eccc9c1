"""Numbers are numbers: a money field takes a JSON number, never a string holding one (as integers are strict).

`Annotated[Decimal, Field(...constraints), JsonNumber()]` is an exact `Decimal` that refuses strings and booleans
and documents itself as a JSON number. Put `JsonNumber()` after the constraints.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

NOT_A_NUMBER = "Must be a JSON number such as 12.5."
NOT_A_STRING = "Must be a JSON number such as 12.5, not a string."


def json_number(value: Any) -> Any:
    """Let a number through (int, Decimal, or the float JSON parsing gives); refuse anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise PydanticCustomError("json_number", NOT_A_STRING if isinstance(value, str) else NOT_A_NUMBER)
    return value


class JsonNumber:
    """Decimal accepts (and documents) `number | string`, even in strict mode; this narrows it to numbers."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        inner = handler(source)
        if inner.get("type") == "decimal":
            # Lax after the check: a JSON number reaches the decimal validator as a float, converted by its text.
            inner = {**inner, "strict": False}
        return core_schema.no_info_before_validator_function(json_number, inner)

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        document = handler(schema)
        branches = document.get("anyOf")
        if isinstance(branches, list):
            numbers = [b for b in branches if b.get("type") != "string"]
            rest = {k: v for k, v in document.items() if k != "anyOf"}
            document = {**numbers[0], **rest} if len(numbers) == 1 else {**rest, "anyOf": numbers}
        return document
