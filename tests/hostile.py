"""A hostile service on a free port: answers that never end, trickle, inflate, or belong to someone else.

Not the emulator on purpose: these answers break HTTP and JSON in ways a well-behaved ASGI app cannot.
A route is (METHOD, path prefix) -> a function writing the whole answer on the handler.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Route = Callable[[BaseHTTPRequestHandler], None]

SESSION_A = "5e551011-aaaa-4aaa-8aaa-00000000000a"
SESSION_B = "5e551011-bbbb-4bbb-8bbb-00000000000b"


def session_json(session_id: str, status: str = "PASSED", result_status: str = "PASSED") -> dict[str, Any]:
    return {
        "testSessionId": session_id,
        "testSessionLink": f"https://app.example.test/test-sessions/{session_id}",
        "name": "hostile",
        "status": status,
        "results": [
            {
                "testSessionResultId": f"{session_id[:-4]}r001",
                "status": result_status,
                "checkId": "0b9a3c4d-1111-4a5b-8c6d-000000000003",
                "name": "Checkout",
                "runLocation": "eu-west-1",
            }
        ],
    }


def answer(body: bytes, status: int = 200, content_type: str = "application/json") -> Route:
    """A whole answer: status, type, length and body."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return route


def json_answer(data: Any, status: int = 200) -> Route:
    return answer(json.dumps(data).encode(), status)


def no_content(h: BaseHTTPRequestHandler) -> None:
    h.send_response(204)
    h.send_header("Content-Length", "0")
    h.end_headers()


def endless_chunked(h: BaseHTTPRequestHandler) -> None:
    """A JSON string that never closes, in 64 KiB chunks, until the client hangs up."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    chunk = b"a" * 65536
    h.wfile.write(b'1\r\n"\r\n')
    while not getattr(h.server, "stopping", False):
        h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))


def _drip(h: BaseHTTPRequestHandler, data: bytes, interval: float) -> bool:
    """Writes `data` one byte every `interval` seconds; False if the server stopped meanwhile."""
    for i in range(len(data)):
        if getattr(h.server, "stopping", False):
            return False
        h.wfile.write(data[i : i + 1])
        h.wfile.flush()
        time.sleep(interval)
    return True


def trickle(interval: float = 1.0) -> Route:
    """Valid-looking JSON, one byte every `interval` seconds: each read is quick, the answer never is."""

    def route(h: BaseHTTPRequestHandler) -> None:
        body = json.dumps(session_json(SESSION_A)).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        _drip(h, body, interval)

    return route


def trickle_headers(interval: float) -> Route:
    """The status line and headers one byte every `interval` seconds, then a valid body at once:
    requests returns the response only once the headers are in, so its read timeout never fires."""

    def route(h: BaseHTTPRequestHandler) -> None:
        body = json.dumps(session_json(SESSION_A)).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        if _drip(h, head.encode(), interval):
            h.wfile.write(body)

    return route


def gzip_bomb(inflated: int = 200 * 1024 * 1024) -> Route:
    """A small gzip body that inflates to `inflated` bytes of spaces (valid JSON whitespace)."""
    body = _bomb(inflated)

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return route


_bombs: dict[int, bytes] = {}


def _bomb(size: int) -> bytes:
    if size not in _bombs:
        _bombs[size] = gzip.compress(b" " * size, compresslevel=9)
    return _bombs[size]


class HostileServer:
    """Threaded HTTP/1.1 server on 127.0.0.1 and a free port; `routes` may change while it runs."""

    def __init__(self, routes: dict[tuple[str, str], Route] | None = None) -> None:
        self.routes: dict[tuple[str, str], Route] = dict(routes or {})
        self.requests: list[tuple[str, str]] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request, as `requests`
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                server.arrivals.append(time.monotonic())
                server.requests.append((self.command, self.path))
                for (method, prefix), route in server.routes.items():
                    if method == self.command and self.path.startswith(prefix):
                        try:
                            route(self)
                        except (BrokenPipeError, ConnectionResetError):
                            self.close_connection = True
                        return
                json_answer({"error": "NotFound", "message": "no route"}, 404)(self)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client hanging up mid-answer is the point of these tests

        self._httpd = Quiet(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.stopping = True  # type: ignore[attr-defined]
        self._httpd.shutdown()
        self._httpd.server_close()
