"""A small shop to run checks against: HTTP, a TCP line service and a DNS zone, all on loopback.

    python examples/local-app/shop.py                 # a good build
    python examples/local-app/shop.py --broken        # a bad build: cart 503, search slow, no line service,
                                                      # the account page's heading changed

Pages for browser checks: /login (a form: username `shopper`, the password from --password), which
leads to /account ("Welcome, shopper"; the bad build says "Your account" instead).

It stands in for the build a CI job starts (docker compose, a dev server) and that only the CI runner
can reach. `examples/local-checks.yml` holds the checks that `testsession run --emulator` executes
against it. Standard library only, except dnspython (a dependency of testsession-runner) for DNS.
"""

from __future__ import annotations

import argparse
import json
import socketserver
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import dns.flags
import dns.message
import dns.rcode
import dns.rrset

VERSION = "2026.11.23"
PRODUCTS = [{"id": 1, "name": "Mug", "price": 12.5}, {"id": 2, "name": "Tee", "price": 20}]


class Shop:
    """What the build serves; `broken` is the bad build of the README's before/after."""

    def __init__(self, broken: bool, token: str, password: str = "correct-horse-battery") -> None:
        self.broken = broken
        self.token = token
        self.password = password
        self._lock = threading.Lock()
        self._payments = 0

    def payments_call(self) -> int:
        with self._lock:
            self._payments += 1
            return self._payments


LOGIN_PAGE = """<!doctype html><html lang="en"><head><title>Sign in - shop</title></head><body>
<h1>Sign in</h1>{error}
<form method="post" action="/login">
  <label>Username <input name="username" autocomplete="username"></label>
  <label>Password <input name="password" type="password" autocomplete="current-password"></label>
  <button type="submit">Sign in</button>
</form></body></html>"""
ACCOUNT_PAGE = """<!doctype html><html lang="en"><head><title>Account - shop</title></head><body>
<h1>{heading}</h1><p id="cart">Your cart is empty</p></body></html>"""


def http_handler(shop: Shop) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "shop/" + VERSION

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
            pass  # quiet: the checks' results are the log

        def _send(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _page(self, status: int, html: str, headers: dict[str, str] | None = None) -> None:
            data = html.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?", 1)[0] != "/login":
                self._send(404, {"error": "Not Found"})
                return
            size = min(int(self.headers.get("Content-Length") or 0), 10_000)
            form = parse_qs(self.rfile.read(size).decode("utf-8", "replace"))
            user, password = form.get("username", [""])[0], form.get("password", [""])[0]
            if user == "shopper" and password == shop.password:
                self.send_response(HTTPStatus.SEE_OTHER)
                self.send_header("Location", "/account")
                self.send_header("Set-Cookie", "session=shopper; Path=/; HttpOnly")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self._page(401, LOGIN_PAGE.format(error='<p role="alert">Wrong username or password</p>'))

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            if path == "/login":
                self._page(200, LOGIN_PAGE.format(error=""))
            elif path == "/account":
                if "session=shopper" not in (self.headers.get("Cookie") or ""):
                    self.send_response(HTTPStatus.SEE_OTHER)
                    self.send_header("Location", "/login")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    heading = "Your account" if shop.broken else "Welcome, shopper"
                    self._page(200, ACCOUNT_PAGE.format(heading=heading))
            elif path == "/health":
                self._send(200, {"status": "ok", "version": VERSION}, {"X-Version": VERSION})
            elif path == "/":
                self.send_response(HTTPStatus.FOUND)
                self.send_header("Location", "/health")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/api/products":
                if self.headers.get("Authorization") != f"Bearer {shop.token}":
                    self._send(401, {"error": "Unauthorized"})
                else:
                    self._send(200, {"data": PRODUCTS, "total": len(PRODUCTS)})
            elif path == "/api/cart":
                if shop.broken:
                    self._send(503, {"error": "Service Unavailable", "message": "cart store not reachable"})
                else:
                    self._send(200, {"items": [], "currency": "EUR"})
            elif path == "/api/search":
                time.sleep(1.5 if shop.broken else 0.02)
                self._send(200, {"results": PRODUCTS[:1]})
            elif path == "/api/payments":
                # Every other call fails, as a payment provider with one bad node behind a balancer.
                if shop.payments_call() % 2 == 1:
                    self._send(502, {"error": "Bad Gateway"})
                else:
                    self._send(200, {"provider": "ok"})
            else:
                self._send(404, {"error": "Not Found"})

    return Handler


def tcp_handler(shop: Shop) -> type[socketserver.BaseRequestHandler]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            line = self.rfile.readline(1024).strip()
            if line == b"PING":
                self.wfile.write(b"PONG\r\n")
            else:
                self.wfile.write(b"-ERR unknown command\r\n")

    return Handler


def dns_answer(wire: bytes) -> bytes:
    """shop.test. A 127.0.0.1 and TXT "v=shop"; anything else NXDOMAIN."""
    query = dns.message.from_wire(wire)
    response = dns.message.make_response(query)
    response.flags |= dns.flags.AA
    question = query.question[0]
    name = question.name.to_text().lower()
    if name == "shop.test.":
        kind = dns.rdatatype.to_text(question.rdtype)
        answers = {"A": ["127.0.0.1"], "TXT": ['"v=shop"']}.get(kind, [])
        if answers:
            response.answer.append(dns.rrset.from_text(name, 60, "IN", kind, *answers))
    else:
        response.set_rcode(dns.rcode.NXDOMAIN)
    return response.to_wire()


class DnsUdp(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data, sock = self.request
        sock.sendto(dns_answer(data), self.client_address)


class DnsTcp(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        size = int.from_bytes(self.rfile.read(2), "big")
        answer = dns_answer(self.rfile.read(size))
        self.wfile.write(len(answer).to_bytes(2, "big") + answer)


class _TCP(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class _UDP(socketserver.ThreadingUDPServer):
    allow_reuse_address = True
    daemon_threads = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8380, help="HTTP (default 8380)")
    parser.add_argument("--tcp-port", type=int, default=8381, help="the PING/PONG service (default 8381)")
    parser.add_argument("--dns-port", type=int, default=8353, help="DNS, UDP and TCP (default 8353)")
    parser.add_argument("--token", default="s3cret-shop-token", help="the bearer token /api/products wants")
    parser.add_argument("--password", default="correct-horse-battery", help="shopper's password at /login")
    parser.add_argument("--broken", action="store_true", help="serve the bad build")
    args = parser.parse_args()
    shop = Shop(args.broken, args.token, args.password)
    try:
        servers: list[socketserver.BaseServer] = [
            ThreadingHTTPServer((args.host, args.port), http_handler(shop)),
            _UDP((args.host, args.dns_port), DnsUdp),
            _TCP((args.host, args.dns_port), DnsTcp),
        ]
        if not args.broken:  # the bad build's line service does not start: its port refuses connections
            servers.append(_TCP((args.host, args.tcp_port), tcp_handler(shop)))
    except OSError as exc:  # most often a shop already running: one line, not a traceback
        ports = f"{args.port}, {args.tcp_port} and {args.dns_port}"
        raise SystemExit(f"shop: cannot listen on {args.host} ports {ports} ({exc.strerror}): another "
                         "shop running? stop it, or pick others with --port, --tcp-port and --dns-port") from None
    build = "broken" if args.broken else "good"
    tcp = "(not started)" if args.broken else f"{args.host}:{args.tcp_port}"
    # Said before the first answer: the sockets listen already, and what connects waits in the backlog.
    print(
        f"shop ({build} build): http://{args.host}:{args.port}  tcp {tcp}  dns {args.host}:{args.dns_port}",
        flush=True,
    )
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
