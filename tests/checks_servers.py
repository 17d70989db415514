"""Real servers on loopback for the real-check tests: HTTP (and HTTPS with a throw-away CA), TCP, DNS.

Each is a plain threaded server on a free port of 127.0.0.1, started by a fixture and stopped after
the module. Nothing here decides a result: the executor under test talks to these over sockets.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import trustme

JSON_DOC: dict[str, Any] = {
    "data": {
        "id": 42,
        "name": "widget",
        "price": 9.5,
        "active": True,
        "nothing": None,
        "empty": [],
        "tags": ["alpha", "beta"],
        "owner": {"login": "ada", "site_admin": False},
    },
    "items": [1, 5, 2],
    "books": [
        {"title": "A", "price": 8.95, "category": "reference"},
        {"title": "B", "price": 12.99, "category": "fiction", "isbn": "0-553-21311-3"},
        {"title": "C", "price": 22.99, "category": "fiction"},
    ],
}
HTML = '<!doctype html><html lang="en"><head><title>Shop</title></head><body>Welcome</body></html>'


def _reset(handler: BaseHTTPRequestHandler) -> None:
    """Closes the connection with a TCP reset (SO_LINGER 0), without an answer."""
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.connection.close()
    handler.close_connection = True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def handle(self) -> None:
        # A client that gave up (a timed-out check) or a refused TLS handshake: nothing to report.
        with contextlib.suppress(OSError):
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes | str, content_type: str = "text/plain", **headers: str) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _route(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        path = parts.path
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if path == "/json":
            self._send(200, json.dumps(JSON_DOC), "application/json; charset=utf-8")
        elif path.startswith("/status/"):
            self._send(int(path.rsplit("/", 1)[1]), f"status {path.rsplit('/', 1)[1]}")
        elif path == "/redirect":
            self._send(302, "", Location="/json")
        elif path == "/redirect-loop":
            self._send(302, "", Location="/redirect-loop")
        elif path == "/slow":
            time.sleep(int(query.get("ms", "200")) / 1000)
            self._send(200, "slow answer")
        elif path == "/trickle":
            if "key" in query:  # a test waits for the request to be under way
                counts = self.server.counts  # type: ignore[attr-defined]
                counts[query["key"]] = counts.get(query["key"], 0) + 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
        elif path == "/reset":
            _reset(self)
        elif path == "/empty":
            self.connection.close()
            self.close_connection = True
        elif path == "/echo":
            echo = {
                "method": self.command,
                "path": parts.path,
                "query": parse_qs(parts.query),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace"),
            }
            self._send(200, json.dumps(echo), "application/json")
        elif path == "/flaky":
            key, fails = query.get("key", ""), int(query.get("fail", "1"))
            counts = self.server.counts  # type: ignore[attr-defined]
            counts[key] = counts.get(key, 0) + 1
            if counts[key] <= fails:
                if query.get("how") == "reset":
                    _reset(self)
                else:
                    self._send(503, "try again")
            else:
                self._send(200, "ok now")
        elif path == "/headers":
            self._send(
                200,
                "headers",
                Strict_Transport_Security="max-age=31536000; includeSubDomains",
                X_Rate_Limit_Remaining="42",
                X_Multi="one",
            )
        elif path == "/html":
            self._send(200, HTML, "text/html")
        elif path == "/big":
            # `fill` repeated `bytes` times, then `tail`: a FATAL past a read cap, a^n! for a regex
            # that backtracks.
            fill, tail = query.get("fill", "b").encode(), query.get("tail", "").encode()
            if "key" in query:  # counted, so that a test knows the request arrived
                counts = self.server.counts  # type: ignore[attr-defined]
                counts[query["key"]] = counts.get(query["key"], 0) + 1
            self._send(200, fill * int(query.get("bytes", "100000")) + tail)
        elif path == "/notjson":
            self._send(200, "{not json", "application/json")
        elif path == "/hostile":
            # What a compromised or buggy build may answer: escapes, line breaks, CI log commands.
            hostile = "\x1b[31mboom\x1b[0m\r\n::error::injected\r\nsection_start:1:x\u202e"
            self._send(500, hostile, "text/plain")
        elif path == "/textjson":
            self._send(200, json.dumps(JSON_DOC), "text/plain")
        else:
            self._send(404, "not found")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _route


@dataclass
class HttpServer:
    server: ThreadingHTTPServer
    scheme: str

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_http(tls: ssl.SSLContext | None = None) -> HttpServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.counts = {}  # type: ignore[attr-defined]
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return HttpServer(server, "https" if tls else "http")


@dataclass
class Tls:
    server_context: ssl.SSLContext
    ca_file: str


def make_tls(directory: Path) -> Tls:
    """A throw-away CA and a certificate for 127.0.0.1 and localhost."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    ca_file = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return Tls(context, str(ca_file))


# --- TCP ----------------------------------------------------------------------------------------------


class _TcpHandler(socketserver.BaseRequestHandler):
    """One line in, an answer by command: PING -> +PONG (stays open until the client closes),
    HELLO -> hello and close, SLOW -> an answer after 0.6 s, SILENT -> nothing, RESET -> a TCP reset,
    TRICKLE -> a byte every 20 ms for 2 s (an answer that does not end)."""

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(3)
        line = b""
        try:
            while not line.endswith(b"\n"):
                chunk = sock.recv(1024)
                if not chunk:
                    return
                line += chunk
        except OSError:
            return
        command = line.strip().decode()
        if command == "PING":
            sock.sendall(b"+PONG\r\n")
            # Stays open until the client closes (or 30 s): only a quiet line can end the client's read,
            # however slow the machine (a fixed 1 s hold made the test a race under load).
            sock.settimeout(30)
            with contextlib.suppress(OSError):
                while sock.recv(1024):
                    pass
        elif command == "HELLO":
            sock.sendall(b"hello there\r\n")
        elif command == "SLOW":
            time.sleep(0.6)
            sock.sendall(b"late\r\n")
        elif command == "SILENT":
            time.sleep(2.0)
        elif command == "TRICKLE":
            with contextlib.suppress(OSError):  # the client gives up at its limit
                for _ in range(100):
                    sock.sendall(b".")
                    time.sleep(0.02)
        elif command == "RESET":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # now, before socketserver's shutdown would send a FIN first


class _ThreadingTcp(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def start_tcp() -> tuple[socketserver.TCPServer, int]:
    server = _ThreadingTcp(("127.0.0.1", 0), _TcpHandler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, int(server.server_address[1])


# --- DNS ----------------------------------------------------------------------------------------------

ZONE: dict[tuple[str, str], list[str]] = {
    ("app.test.", "A"): ["10.1.2.3", "10.1.2.4"],
    ("app.test.", "AAAA"): ["2001:db8::1"],
    ("www.app.test.", "CNAME"): ["app.test."],
    ("app.test.", "MX"): ["10 mail.app.test.", "20 mail2.app.test."],
    ("app.test.", "TXT"): ['"v=spf1 include:_spf.app.test ~all"'],
    ("app.test.", "NS"): ["ns1.app.test."],
    ("app.test.", "SOA"): ["ns1.app.test. admin.app.test. 2024010100 7200 3600 1209600 3600"],
    ("slow.app.test.", "A"): ["10.9.9.9"],
}


def dns_answer(wire: bytes) -> bytes | None:
    try:
        query = dns.message.from_wire(wire)
    except Exception:
        return None
    response = dns.message.make_response(query)
    response.flags |= dns.flags.RA
    question = query.question[0]
    name, kind = question.name.to_text().lower(), dns.rdatatype.to_text(question.rdtype)
    if name == "slow.app.test.":
        time.sleep(0.5)
    if name == "servfail.app.test.":
        response.set_rcode(dns.rcode.SERVFAIL)
    elif (name, kind) in ZONE:
        response.answer.append(dns.rrset.from_text(name, 300, "IN", kind, *ZONE[(name, kind)]))
    elif not any(key[0] == name for key in ZONE):
        response.set_rcode(dns.rcode.NXDOMAIN)
    return response.to_wire()


class DnsServer:
    """UDP and TCP on the same port of 127.0.0.1."""

    def __init__(self) -> None:
        for _ in range(20):
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind(("127.0.0.1", 0))
            self.port = self.udp.getsockname()[1]
            self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                self.tcp.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.udp.close()
                self.tcp.close()
        self.tcp.listen(16)
        self.stopping = threading.Event()
        self.udp.settimeout(0.05)
        self.tcp.settimeout(0.05)
        for target in (self._serve_udp, self._serve_tcp):
            threading.Thread(target=target, daemon=True).start()

    def _serve_udp(self) -> None:
        while not self.stopping.is_set():
            try:
                wire, peer = self.udp.recvfrom(65535)
            except OSError:
                continue
            _spawn(lambda w=wire, p=peer: self._reply_udp(w, p))

    def _reply_udp(self, wire: bytes, peer: Any) -> None:
        answer = dns_answer(wire)
        if answer is not None:
            self.udp.sendto(answer, peer)

    def _serve_tcp(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                continue
            _spawn(lambda c=conn: self._reply_tcp(c))

    def _reply_tcp(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2)
            head = conn.recv(2)
            if len(head) < 2:
                return
            size = struct.unpack("!H", head)[0]
            wire = b""
            while len(wire) < size:
                chunk = conn.recv(size - len(wire))
                if not chunk:
                    return
                wire += chunk
            answer = dns_answer(wire)
            if answer is not None:
                conn.sendall(struct.pack("!H", len(answer)) + answer)

    def stop(self) -> None:
        self.stopping.set()
        self.udp.close()
        self.tcp.close()


def _spawn(work: Callable[[], None]) -> None:
    threading.Thread(target=work, daemon=True).start()


def free_port() -> int:
    """A port with nothing listening on it (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def running(server: HttpServer) -> Iterator[HttpServer]:
    try:
        yield server
    finally:
        server.stop()
