"""The web application (Starlette, served by hypercorn on trio).

One background task polls the cluster (``Collector.poll`` in a worker thread) about once a
``interval``; every page is rendered from the latest snapshot, so any number of browsers
cost the cluster nothing more. A page's live part asks for the next snapshot
(``/live/<page>?since=N`` waits until there is one newer than N) and replaces itself with it:
htmx's load polling, one request per snapshot, no full reload.

Everything from the cluster (topic names, ids) goes through Jinja2's autoescaping. The only
write, the abort of a hanging transaction, is a POST that needs the CSRF token of the
browser's session cookie, from a confirmation page; ``read_only`` turns it off."""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlencode

import anyio
import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .actions import ActionError, abort_transaction
from .client import Cluster, ClusterError
from .collect import Collector
from .model import History, Snapshot

log = logging.getLogger("minikafka.console")
HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "minikafka_console_session"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
PAGES = ("overview", "transactions", "transaction", "partitions", "groups")
MAX_ROWS = 500  # rows of a table before "N more"
PARTITION_ROWS = 200  # the partitions page's table (a filter narrows it)
LIVE_WAIT = 15.0  # seconds a live request waits for a newer snapshot


@dataclass
class Settings:
    bootstrap: str
    properties: dict[str, str] = field(default_factory=dict)
    interval: float = 1.0
    read_only: bool = False
    timeout: float = 10.0
    allowed_hosts: set[str] | None = None  # None: any Host header


class Hub:
    """The poll loop and its latest snapshot; requests wait on ``newer_than``."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.history = History()
        self.snapshot: Snapshot | None = None
        self._changed = anyio.Event()
        self._poke = anyio.Event()
        self._collector: Collector | None = None

    def _poll(self) -> Snapshot:
        if self._collector is None:
            self._collector = Collector(Cluster(self.settings.bootstrap, self.settings.properties,
                                                timeout=self.settings.timeout), self.history)
        try:
            return self._collector.poll()
        except Exception as e:  # a bug must not stop the console: show it, poll again
            log.exception("poll failed")
            seq = self._collector.seq
            return Snapshot(seq=seq, time_ms=int(time.time() * 1000), poll_ms=0.0, bootstrap=self.settings.bootstrap,
                            errors=[f"internal error: {type(e).__name__}: {e}"])

    async def run(self) -> None:
        while True:
            t0 = anyio.current_time()
            snap = await anyio.to_thread.run_sync(self._poll, abandon_on_cancel=True)
            self.snapshot = snap
            changed, self._changed = self._changed, anyio.Event()
            changed.set()
            elapsed = anyio.current_time() - t0
            with anyio.move_on_after(max(self.settings.interval - elapsed, self.settings.interval / 4)):
                await self._poke.wait()
            self._poke = anyio.Event()

    def poke(self) -> None:
        """Poll now (after an action) rather than at the next interval."""
        self._poke.set()

    async def newer_than(self, seq: int, timeout: float) -> Snapshot | None:
        if self.snapshot is not None and seq > self.snapshot.seq:
            return self.snapshot  # a page of an earlier run of the console: start again from this one
        with anyio.move_on_after(timeout):
            while self.snapshot is None or self.snapshot.seq <= seq:
                await self._changed.wait()
        return self.snapshot

    async def first(self) -> Snapshot | None:
        return await self.newer_than(0, 2 * self.settings.timeout)

    def close(self) -> None:
        if self._collector is not None:
            self._collector.cluster.close()


# ---------------------------------------------------------------------- rendering helpers
def fmt_time(ms) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def fmt_duration(ms) -> str:
    if ms is None:
        return "-"
    s = max(ms, 0) / 1000
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 10:
        return f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.0f} d"


def make_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["time"] = fmt_time
    env.filters["duration"] = fmt_duration
    env.globals["MAX_ROWS"] = MAX_ROWS
    return env


def state_class(state: str) -> str:
    return {"Ongoing": "open", "PrepareCommit": "prepare", "PrepareAbort": "prepare",
            "PrepareEpochFence": "prepare", "CompleteCommit": "commit", "CompleteAbort": "abort",
            "Empty": "empty", "Dead": "dead", "Deleted": "dead"}.get(state, "unknown")


# ---------------------------------------------------------------------- the application
def create_app(settings: Settings) -> Starlette:
    hub = Hub(settings)
    env = make_env()
    env.globals["state_class"] = state_class
    env.globals["read_only"] = settings.read_only
    secret = secrets.token_bytes(32)

    def csrf_token(session: str) -> str:
        return hmac.new(secret, session.encode(), hashlib.sha256).hexdigest()

    def session_of(request: Request) -> tuple[str, bool]:
        """(the browser's session id, whether it is new and needs its cookie set)."""
        s = request.cookies.get(SESSION_COOKIE, "")
        if len(s) == 43 and s.replace("-", "").replace("_", "").isalnum():
            return s, False
        return secrets.token_urlsafe(32), True

    def html(request: Request, template: str, status: int = 200, **context) -> HTMLResponse:
        t0, c0 = time.perf_counter(), time.thread_time()
        session, new = session_of(request)
        context.setdefault("csrf_token", csrf_token(session))
        text = env.get_template(template).render(request=request, **context)
        # how long the page took to make, wall and CPU (bench/console.py reads it)
        timing = f"render;dur={(time.perf_counter() - t0) * 1000:.1f}, cpu;dur={(time.thread_time() - c0) * 1000:.1f}"
        response = HTMLResponse(text, status_code=status, headers={"server-timing": timing})
        if new:
            response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict", path="/")
        return response

    def page_context(page: str, request: Request, snap: Snapshot) -> dict:
        q = request.query_params
        ctx = {"page": page, "snap": snap, "now_ms": snap.time_ms}
        if page == "transaction":
            ctx["tid"] = q.get("id", "")
        elif page == "partitions":
            ctx.update(partitions_context(snap, q))
        elif page == "transactions":
            ctx["rows"] = transactions_rows(snap)
        elif page == "overview":
            ctx.update(overview_context(snap))
        return ctx

    async def page(request: Request) -> Response:
        name = request.url.path.strip("/") or "overview"
        snap = await hub.first()
        if snap is None:
            return html(request, "error.html", 503, message="no answer from the cluster yet", page=name)
        ctx = page_context(name, request, snap)
        query = live_query(request)
        if name == "partitions" and ctx["selected"] is not None and "topic" not in request.query_params:
            # the default selection (the chart's partition) stays that of the live updates
            query = "&".join(filter(None, [query, urlencode({"topic": ctx["selected"].topic,
                                                               "partition": ctx["selected"].partition})]))
        return html(request, "page.html", body=f"live_{name}.html", live_query=query, **ctx)

    async def live(request: Request) -> Response:
        name = request.path_params["page"]
        if name not in PAGES:
            return Response("not found", 404)
        try:
            since = int(request.query_params.get("since", "0"))
        except ValueError:
            since = 0
        snap = await hub.newer_than(since, LIVE_WAIT)
        if snap is None:
            return Response("no snapshot", 503)
        return html(request, "live.html", body=f"live_{name}.html", **page_context(name, request, snap),
                    live_query=live_query(request))

    async def history(request: Request) -> Response:
        q = request.query_params
        try:
            key = (q["topic"], int(q["partition"]))
        except (KeyError, ValueError):
            return JSONResponse({"error": "topic and partition wanted"}, 400)
        return JSONResponse(hub.history.of(key))

    def abort_target(form) -> tuple[str, int, int] | None:
        try:
            return form["topic"], int(form["partition"]), int(form["start_offset"])
        except (KeyError, ValueError):
            return None

    async def abort_confirm(request: Request) -> Response:
        target = abort_target(request.query_params)
        snap = await hub.first()
        if target is None or snap is None:
            return html(request, "error.html", 400, message="which transaction? (topic, partition, start offset)",
                        page="overview")
        txn = snap.open_txn(*target)
        return html(request, "abort.html", 200 if txn is not None else 404, page="overview", snap=snap,
                    target=target, txn=txn, now_ms=snap.time_ms)

    async def abort_post(request: Request) -> Response:
        if settings.read_only:
            return html(request, "error.html", 403, page="overview",
                        message="this console is read-only (--read-only)")
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
            return html(request, "error.html", 403, page="overview", message="cross-origin request refused")
        form = await request.form()
        session = request.cookies.get(SESSION_COOKIE, "")
        if not session or not hmac.compare_digest(str(form.get("csrf_token", "")), csrf_token(session)):
            return html(request, "error.html", 403, page="overview",
                        message="the form's CSRF token does not match this browser's session: reload the page")
        target = abort_target(form)
        if target is None:
            return html(request, "error.html", 400, page="overview", message="which transaction?")
        snap = hub.snapshot
        txn = snap.open_txn(*target) if snap is not None else None
        if txn is None or not txn.hanging:
            return html(request, "error.html", 409, page="overview",
                        message="the console no longer sees this transaction as hanging: nothing was aborted")
        try:
            producer_id = int(form.get("producer_id", ""))
        except ValueError:
            producer_id = None

        def run() -> str:
            with Cluster(settings.bootstrap, settings.properties, timeout=settings.timeout,
                         client_id="minikafka-console-abort") as cluster:
                return abort_transaction(cluster, *target, producer_id=producer_id)
        try:
            done = await anyio.to_thread.run_sync(run)
        except (ActionError, ClusterError) as e:
            log.warning("abort of %s-%s at %s failed: %s", *target, e)
            return html(request, "abort_done.html", 502, page="overview", ok=False, message=str(e), target=target)
        log.warning("console: %s", done)
        hub.poke()
        return html(request, "abort_done.html", page="overview", ok=True, message=done, target=target)

    async def favicon(request: Request) -> Response:
        return Response((HERE / "static" / "favicon.svg").read_bytes(), media_type="image/svg+xml")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hub.run)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                hub.close()

    routes = [Route("/", page), Route("/transactions", page), Route("/transaction", page),
              Route("/partitions", page), Route("/groups", page),
              Route("/live/{page}", live), Route("/api/history", history),
              Route("/abort", abort_confirm, methods=["GET"]), Route("/abort", abort_post, methods=["POST"]),
              Route("/favicon.ico", favicon),
              Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static")]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.hub = hub
    return SecurityHeaders(app, settings.allowed_hosts)


def live_query(request: Request) -> str:
    """The page's own query (its selection), for the live requests."""
    return urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "since"])


def partitions_context(snap: Snapshot, q) -> dict:
    """The partitions shown (held back first, then by name; internal topics on request, names
    containing ``filter``), at most PARTITION_ROWS, and the one charted."""
    show_internal = q.get("internal") == "1"
    needle = q.get("filter", "")
    rows = sorted((p for p in snap.partitions.values()
                   if (show_internal or not p.internal) and needle in p.topic),
                  key=lambda p: (not p.pinned, p.key))
    selected = None
    if "topic" in q:
        try:
            selected = snap.partitions.get((q["topic"], int(q.get("partition", "0"))))
        except ValueError:
            selected = None
    if selected is None:
        pinned = snap.pinned
        selected = pinned[0] if pinned else (rows[0] if rows else None)
    return {"rows": rows, "selected": selected, "show_internal": show_internal, "filter": needle,
            "PARTITION_ROWS": PARTITION_ROWS}


def overview_context(snap: Snapshot) -> dict:
    """Each held-back partition with the open transaction its LSO waits for."""
    rows = []
    for p in snap.pinned:
        pins = snap.pins_of(p.key)
        rows.append((p, next((t for t in pins if t.pins), pins[0] if pins else None), len(pins)))
    return {"pinned_rows": rows, "open_count": sum(1 for t in snap.transactions.values() if t.is_open)}


def transactions_rows(snap: Snapshot) -> list:
    """Open transactions first, the longest open first; then by id."""
    now = snap.time_ms

    def order(info):
        age = info.age_ms(now)
        return (0, -age, info.transactional_id) if age is not None else (1 if info.is_open else 2, 0,
                                                                         info.transactional_id)
    return sorted(snap.transactions.values(), key=order)


class SecurityHeaders:
    """Every answer: a strict Content-Security-Policy (scripts and styles from /static only),
    no framing, no sniffing. Requests whose Host is not allowed are refused (a page of a
    rebinding DNS name cannot reach a console bound to loopback)."""

    HEADERS = [
        (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                     b"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; "
                                     b"base-uri 'none'; object-src 'none'"),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"same-origin"),
        (b"cache-control", b"no-store"),
    ]

    def __init__(self, app, allowed_hosts: set[str] | None):
        self.app = app
        self.allowed_hosts = allowed_hosts

    @property
    def state(self):
        return self.app.state

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.allowed_hosts is not None:
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name.lower() not in self.allowed_hosts:
                await Response("Host not allowed", 421)(scope, receive, send)
                return

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                static = scope["path"].startswith("/static/")
                for k, v in self.HEADERS:
                    if not (static and k == b"cache-control"):
                        headers.append((k, v))
                message = {**message, "headers": headers}
            await send(message)
        await self.app(scope, receive, send_with_headers)

