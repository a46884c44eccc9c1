"""An id route never matches the path of one of its resource's operations (docs/decisions/0338-operation-names.md).

`GET /api/orders/{order_id}` also matched `/api/orders/List`, `/Confirm`, `/Cancel`...: a GET sent to one of those
POST operations read an order called "List" (404 "No order with this id"), and a PUT there listed GET in `Allow`. Here
each route with path parameters is told the paths of the literal routes it would also match; its regular expression
then refuses them, so the router and the 405's `Allow` (errors.allowed_methods) see the operation's route alone: GET
`/api/orders/List` is 405 with `Allow: POST`. The operation names are reserved in their exact casing only (the routes
are case-sensitive): `/api/products/list` is still a SKU.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from starlette.routing import BaseRoute, Route


def reserve(routes: Iterable[BaseRoute]) -> dict[str, list[str]]:
    """Make every parameter route refuse the literal routes' paths it matched. Returns, for each changed route's
    path, the paths it no longer matches."""
    table = [route for route in routes if isinstance(route, Route)]
    literal = [route.path for route in table if not route.param_convertors]
    reserved: dict[str, list[str]] = {}
    for route in table:
        if not route.param_convertors:
            continue
        taken = [path for path in literal if route.path_regex.match(path)]
        if not taken:
            continue
        pattern = route.path_regex.pattern
        if not pattern.startswith("^"):  # Starlette's compile_path anchors every route; anything else is left alone
            continue
        refused = "|".join(re.escape(path) for path in taken)
        route.path_regex = re.compile(f"^(?!(?:{refused})$){pattern[1:]}")
        reserved[route.path] = taken
    return reserved
