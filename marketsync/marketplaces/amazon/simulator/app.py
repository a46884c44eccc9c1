"""The simulator as an ASGI application: SP-API, Login with Amazon, the consent page, feed document URLs, product type
schema documents, and control endpoints under /_simulator.

Every SP-API request is validated against the vendored model of the operation it matches, and every answer before it
is sent (contracts/validation.py). A request that breaks the contract is recorded and answered as Amazon does (400,
`errors`); an answer that would break it is the simulator's bug: recorded, and a 500 is sent instead. The LWA token
endpoint is held to the LWA schemas in the same module. The consent page, the document URLs (S3 at Amazon), the
schema documents and the control endpoints are not part of SP-API and are not contract-validated.
"""

from __future__ import annotations

import asyncio
import html
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from marketsync.kit import jsonio
from marketsync.marketplaces.amazon.contracts.validation import Operation, lwa_request_errors, lwa_response_errors
from marketsync.marketplaces.amazon.simulator import operations
from marketsync.marketplaces.amazon.simulator import product_types as pt
from marketsync.marketplaces.amazon.simulator.state import (
    AmazonSimulator,
    Seller,
    SimulatorError,
    Violation,
    unauthorized,
)

SIMULATED_MODELS = frozenset(
    {"ordersV0", "sellers", "tokens_2021-03-01", "feeds_2021-06-30", "listingsItems_2021-08-01",
     "definitionsProductTypes_2020-09-01"}
)  # fmt: skip
FAULT_ANSWERS = {
    429: ("QuotaExceeded", "You exceeded your quota for the requested resource."),
    500: ("InternalFailure", "We encountered an internal error. Please try again."),
    503: ("ServiceUnavailable", "Service temporarily unavailable. Please try again."),
}
REVOKED = "The access token you provided is revoked, malformed or invalid."
EXPIRED = "The access token you provided has expired."


def _error_body(code: str, message: str, details: str = "") -> dict[str, Any]:
    return {"errors": [{"code": code, "message": message, "details": details}]}


class Simulator:
    """The routes of one AmazonSimulator."""

    def __init__(self, sim: AmazonSimulator) -> None:
        self.sim = sim

    def _remember_base(self, request: Request) -> None:
        if not self.sim.base_url:
            self.sim.base_url = str(request.base_url).rstrip("/")

    async def _send(self, operation: str, status: int, body: bytes, headers: dict[str, str], media: str) -> Response:
        delay = self.sim.delays_s.get(operation, self.sim.delays_s.get(None, 0.0))
        if delay:
            await asyncio.sleep(delay)
        drip = self.sim.drips_s.get(operation, self.sim.drips_s.get(None))
        if drip is None:
            return Response(body, status_code=status, headers=headers, media_type=media)

        async def one_byte_at_a_time() -> AsyncIterator[bytes]:
            for index in range(len(body)):
                yield body[index : index + 1]
                await asyncio.sleep(drip)

        return StreamingResponse(
            one_byte_at_a_time(), status_code=status, headers={**headers, "content-length": str(len(body))},
            media_type=media,
        )  # fmt: skip

    # -- SP-API ---------------------------------------------------------------------------------------------------

    async def spapi(self, request: Request) -> Response:
        self._remember_base(request)
        sim = self.sim
        method = request.method
        raw_path = request.scope.get("raw_path", b"").decode() or request.url.path
        raw_path = raw_path.split("?", 1)[0]
        query = parse_qsl(request.url.query, keep_blank_values=True)
        body = await request.body()
        match = sim.contracts.match(method, raw_path)
        request_id = str(uuid.uuid4())
        if match is None:
            sim.record(Violation("request", "?", method, raw_path, ("no operation of the models has this path",)))
            missing = jsonio.dumps(_error_body("NotFound", f"{method} {raw_path} is not an SP-API operation"))
            return Response(missing, 404, {"x-amzn-RequestId": request_id}, media_type="application/json")
        op = match.operation
        errors = sim.contracts.request_errors(match, query, request.headers, body, request.headers.get("content-type"))
        if errors:
            sim.record(Violation("request", op.operation_id, method, raw_path, tuple(errors)))
        rate, _ = sim.rate_of(op.operation_id)
        headers = {"x-amzn-RateLimit-Limit": f"{rate:g}", "x-amzn-RequestId": request_id}
        status, payload = self._answer(op, match.path_parameters, query, body, raw_path, errors, request)
        problems = sim.contracts.response_errors(op, status, headers, payload)
        if problems:
            sim.record(Violation("response", op.operation_id, method, raw_path, tuple(problems), status))
            status, payload = 500, _error_body("InternalFailure", "The simulator broke the contract (recorded).")
        sim.requests.append((op.operation_id, method, raw_path))
        content = b"" if payload is None else jsonio.dumps(payload)
        return await self._send(op.operation_id, status, content, headers, "application/json")

    def _answer(
        self,
        op: Operation,
        path_parameters: dict[str, str],
        query: list[tuple[str, str]],
        body: bytes,
        raw_path: str,
        errors: list[str],
        request: Request,
    ) -> tuple[int, Any]:
        sim = self.sim
        try:
            seller, elements = self._authenticate(op, request.headers.get("x-amz-access-token"), raw_path)
            if errors:
                raise SimulatorError(400, "InvalidInput", errors[0], "; ".join(errors))
            handler = operations.HANDLERS.get(op.operation_id) if op.model in SIMULATED_MODELS else None
            if handler is None:
                raise SimulatorError(400, "InvalidInput", f"The simulator does not simulate {op.operation_id}")
            fault = sim.take_fault(op.operation_id)
            if fault is not None:
                return fault, _error_body(*FAULT_ANSWERS.get(fault, FAULT_ANSWERS[500]))
            if not sim.take_token(seller.selling_partner_id, op.operation_id):
                return 429, _error_body(*FAULT_ANSWERS[429])
            grouped: dict[str, list[str]] = {}
            for name, value in query:
                grouped.setdefault(name, []).append(value)
            call = operations.Call(
                sim, op, path_parameters, grouped, jsonio.loads(body) if body.strip() else None, seller, elements
            )
            return handler(call)
        except SimulatorError as exc:
            return exc.status, exc.body()

    def _authenticate(self, op: Operation, token: str | None, raw_path: str) -> tuple[Seller, frozenset[str]]:
        sim = self.sim
        now = sim.clock.now()
        if not token:
            raise unauthorized("The request has no x-amz-access-token header.")
        restricted = op.operation_id in operations.RESTRICTED_OPERATIONS
        if token.startswith("Atz.sprdt|"):
            rdt = sim.restricted_tokens.get(token)
            if rdt is None:
                raise unauthorized(REVOKED)
            if rdt.expires_at <= now:
                raise unauthorized(EXPIRED)
            seller = sim.seller(rdt.seller_id)
            self._authorised(op, seller)
            elements = operations.rdt_elements(rdt, op.method, raw_path) if restricted else None
            if elements is None:
                raise unauthorized("The restricted data token was not issued for this operation and path.")
            return seller, elements
        access = sim.access_tokens.get(token)
        if access is None:
            raise unauthorized(REVOKED)
        if access.expires_at <= now:
            raise unauthorized(EXPIRED)
        seller = sim.seller(access.seller_id)
        self._authorised(op, seller)
        return seller, frozenset()

    @staticmethod
    def _authorised(op: Operation, seller: Seller) -> None:
        if not seller.authorised:
            status = seller.revoked_status if str(seller.revoked_status) in op.responses else 403
            raise SimulatorError(status, "Unauthorized", "Access to requested resource is denied.", REVOKED)

    # -- Login with Amazon ----------------------------------------------------------------------------------------

    async def lwa_token(self, request: Request) -> Response:
        sim = self.sim
        raw = await request.body()
        if "json" in request.headers.get("content-type", ""):
            loaded: Any = jsonio.loads(raw) if raw.strip() else {}
            form = [(str(k), str(v)) for k, v in loaded.items()] if isinstance(loaded, dict) else []
        else:
            form = parse_qsl(raw.decode(errors="replace"), keep_blank_values=True)
        errors = lwa_request_errors(form)
        if errors:
            sim.record(Violation("lwa", "lwaToken", "POST", "/auth/o2/token", tuple(errors)))
        status, payload = self._lwa_answer(dict(form), errors)
        problems = lwa_response_errors(status, payload)
        if problems:
            sim.record(Violation("lwa", "lwaToken", "POST", "/auth/o2/token", tuple(problems), status))
            status, payload = 500, {"error": "server_error", "error_description": "The simulator broke the contract."}
        return await self._send(
            "lwaToken", status, jsonio.dumps(payload), {"cache-control": "no-store"}, "application/json"
        )

    def _lwa_answer(self, form: dict[str, str], errors: list[str]) -> tuple[int, dict[str, Any]]:
        sim = self.sim
        fault = sim.take_fault("lwaToken", lwa=True)
        if fault is not None:
            error = "temporarily_unavailable" if fault != 500 else "server_error"
            return (503 if fault != 500 else 500), {"error": error, "error_description": "Try again later."}
        grant = form.get("grant_type")
        if grant not in ("authorization_code", "refresh_token", "client_credentials"):
            return 400, {"error": "unsupported_grant_type", "error_description": f"Unsupported grant type {grant!r}"}
        if errors:
            return 400, {"error": "invalid_request", "error_description": errors[0]}
        app = sim.applications.get(form["client_id"])
        if app is None or app.client_secret != form["client_secret"]:
            return 401, {"error": "invalid_client", "error_description": "Client authentication failed"}
        if grant == "client_credentials":
            return 400, {"error": "invalid_scope", "error_description": "The simulator issues no grantless tokens"}
        if grant == "authorization_code":
            code = sim.codes.get(form["code"])
            now = sim.clock.now()
            redirect = form.get("redirect_uri")
            if (
                code is None or code.used or code.expires_at <= now or code.client_id != app.client_id
                or (redirect is not None and redirect != code.redirect_uri)
            ):  # fmt: skip
                return 400, {"error": "invalid_grant", "error_description": "The request has an invalid grant "
                             "parameter : code"}  # fmt: skip
            code.used = True
            refresh = sim.authorise(code.seller_id, app.client_id)
            access, expires = sim.issue_access_token(code.seller_id, app.client_id)
            return 200, {"access_token": access, "refresh_token": refresh, "token_type": "bearer",
                         "expires_in": expires}  # fmt: skip
        for seller in sim.sellers.values():
            if seller.refresh_tokens.get(form["refresh_token"]) == app.client_id and seller.authorised:
                access, expires = sim.issue_access_token(seller.selling_partner_id, app.client_id)
                return 200, {"access_token": access, "refresh_token": form["refresh_token"], "token_type": "bearer",
                             "expires_in": expires}  # fmt: skip
        return 400, {"error": "invalid_grant", "error_description": "The request has an invalid grant parameter : "
                     "refresh_token"}  # fmt: skip

    # -- the consent page (Seller Central's website authorization workflow) ---------------------------------------

    def _consent_problem(self, params: dict[str, str]) -> tuple[str | None, str]:
        app = self.sim.application_by_id(params.get("application_id", ""))
        if app is None:
            return "This application is not registered.", ""
        if app.draft and params.get("version") != "beta":
            return "This application is in draft status: authorise it with version=beta.", ""
        if not params.get("state"):
            return "The authorisation request has no state.", ""
        redirect = params.get("redirect_uri") or (app.redirect_uris[0] if app.redirect_uris else "")
        if not redirect or redirect not in app.redirect_uris:
            return "The redirect URI is not one the application registered.", ""
        return None, redirect

    async def consent(self, request: Request) -> Response:
        params = dict(request.query_params)
        problem, redirect = self._consent_problem(params)
        if problem:
            return HTMLResponse(_page("Authorisation failed", f"<p>{html.escape(problem)}</p>"), 400)
        app = self.sim.application_by_id(params["application_id"])
        assert app is not None
        options = (
            "".join(
                f'<option value="{html.escape(s.selling_partner_id)}">{html.escape(s.store_name)} '
                f"({html.escape(s.selling_partner_id)})</option>"
                for s in self.sim.sellers.values()
            )
            or '<option value="">A new selling partner</option>'
        )
        hidden = "".join(
            f'<input type="hidden" name="{k}" value="{html.escape(v)}">'
            for k, v in (("application_id", app.application_id), ("state", params["state"]),
                         ("redirect_uri", redirect), ("version", params.get("version", "")))
        )  # fmt: skip
        body = (
            f"<p><strong>{html.escape(app.name)}</strong> asks to access your selling account through the "
            f"Selling Partner API.</p><form method=post action=/apps/authorize/confirm>{hidden}"
            f"<label>Selling account <select name=selling_partner_id>{options}</select></label>"
            f"<p><button name=decision value=authorise type=submit>Authorise</button> "
            f"<button name=decision value=deny type=submit>Deny</button></p></form>"
        )
        return HTMLResponse(_page("Authorise an application", body))

    async def consent_confirm(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        problem, redirect = self._consent_problem(form)
        if problem:
            return HTMLResponse(_page("Authorisation failed", f"<p>{html.escape(problem)}</p>"), 400)
        app = self.sim.application_by_id(form["application_id"])
        assert app is not None
        separator = "&" if "?" in redirect else "?"
        if form.get("decision") != "authorise":
            query = urlencode({"error": "access_denied", "error_description": "The selling partner denied access",
                               "state": form["state"]})  # fmt: skip
            return RedirectResponse(f"{redirect}{separator}{query}", 302)
        seller_id = form.get("selling_partner_id") or ""
        if seller_id not in self.sim.sellers:
            seller_id = self.sim.add_seller(selling_partner_id=seller_id or None).selling_partner_id
        code = self.sim.authorization_code(seller_id, app.client_id, redirect)
        query = urlencode({"state": form["state"], "selling_partner_id": seller_id, "spapi_oauth_code": code})
        return RedirectResponse(f"{redirect}{separator}{query}", 302)

    # -- feed documents (presigned S3 URLs at Amazon) --------------------------------------------------------------

    async def document(self, request: Request) -> Response:
        sim = self.sim
        document = sim.documents.get(request.path_params["document_id"])
        if document is None:
            return _s3_error(404, "NoSuchKey", "The specified key does not exist.")
        if document.url_expires_at <= sim.clock.now():
            return _s3_error(403, "AccessDenied", "Request has expired")
        if request.method == "PUT":
            if document.is_result:
                return _s3_error(403, "AccessDenied", "Access Denied")
            if request.headers.get("content-type", "") != document.content_type:
                # The URL is signed for the contentType given to createFeedDocument.
                return _s3_error(403, "SignatureDoesNotMatch", "The request signature we calculated does not match")
            document.content = await request.body()
            return Response(b"", 200)
        if document.content is None:
            return _s3_error(404, "NoSuchKey", "The specified key does not exist.")
        return await self._send("getFeedDocumentContent", 200, document.content, {}, document.content_type)

    # -- schema documents ------------------------------------------------------------------------------------------

    async def meta_schema(self, request: Request) -> Response:
        return Response(pt.document_bytes(pt.META_SCHEMA), media_type="application/schema+json")

    async def product_type_schema(self, request: Request) -> Response:
        p = request.path_params
        try:
            content = operations.schema_document(
                self.sim, p["marketplace_id"], p["product_type"], request.query_params.get("requirements", "LISTING"),
                request.query_params.get("enforced", "true") == "true",
            )  # fmt: skip
        except KeyError:
            return _s3_error(404, "NoSuchKey", "The specified key does not exist.")
        return Response(content, media_type="application/schema+json")

    # -- control (not SP-API) --------------------------------------------------------------------------------------

    async def control(self, request: Request) -> Response:
        from marketsync.marketplaces.amazon.simulator import control

        self._remember_base(request)
        raw = await request.body()
        try:
            data = jsonio.loads(raw) if raw.strip() else {}
            status, payload = control.handle(self.sim, request.method, request.path_params["path"], data)
        except (KeyError, ValueError, TypeError) as exc:
            status, payload = 400, {"error": str(exc)}
        return Response(jsonio.dumps(payload), status, media_type="application/json")


def _s3_error(status: int, code: str, message: str) -> Response:
    body = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>'
    return Response(body.encode(), status, media_type="application/xml")


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{title} - Amazon Seller Central "
        f"(simulator)</title></head><body><h1>{title}</h1>{body}</body></html>"
    )


def create_simulator_app(sim: AmazonSimulator | None = None) -> Starlette:
    """The ASGI app of `sim` (a new simulator on the system clock when none is given); `app.state.simulator`."""
    simulator = Simulator(sim or AmazonSimulator())
    every = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app = Starlette(
        routes=[
            Route("/auth/o2/token", simulator.lwa_token, methods=["POST"]),
            Route("/apps/authorize/consent", simulator.consent, methods=["GET"]),
            Route("/apps/authorize/confirm", simulator.consent_confirm, methods=["POST"]),
            Route("/feed-documents/{document_id}", simulator.document, methods=["GET", "PUT"]),
            Route("/_schemas/meta-schema/v1.json", simulator.meta_schema, methods=["GET"]),
            Route(
                "/_schemas/product-types/{marketplace_id}/{product_type}/{version}.json",
                simulator.product_type_schema,
                methods=["GET"],
            ),
            Route("/_simulator/{path:path}", simulator.control, methods=every),
            Route("/{path:path}", simulator.spapi, methods=every),
        ]
    )
    app.state.simulator = simulator.sim
    return app
