"""The local API that bench/checks_vs_newman.py checks: a small HTTP/1.1 server on loopback, in its own
process, that measures its own time per response.

Why its own process and asyncio: the tools under test must not share an interpreter (or a GIL) with the
server, and one event loop answers a loopback request in tens of microseconds without a thread per
connection, so the server adds as little as it can to what is measured.

Run by the benchmark as `python -S bench/checks_server.py`. It prints `PORT <n>` once it listens. Then
one command per stdin line, one JSON answer per stdout line:
- `stats`: what was answered since the last `stats`: {"count", "statuses", "agents", "server_us"}, the
  last being the median, mean, 95th percentile and max of the server's own time per response in
  microseconds (from the end of the request's header block to the response handed to the socket). The
  counters start again.
- end of input: the server stops.

Routes (GET or HEAD, keep-alive as the client asks): /health, /api/items/<n>, /api/users/<n>,
/api/orders?page=<n>, /api/cart answer 200 with a small JSON body; anything else 404.
"""

import asyncio
import json
import sys
import threading
import time

ROUTES = (b"/health", b"/api/items/", b"/api/users/", b"/api/orders", b"/api/cart")
MAX_HEAD = 16 * 1024  # a request's header block is read up to this


class Counters:
    def __init__(self):
        self.times_ns = []
        self.statuses = {}
        self.agents = {}

    def add(self, ns, status, agent):
        self.times_ns.append(ns)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.agents[agent] = self.agents.get(agent, 0) + 1


counters = Counters()


def answer_for(target):
    path = target.split(b"?", 1)[0]
    known = path in (b"/health", b"/api/cart", b"/api/orders") or (
        path.startswith(ROUTES[1:3]) and path.rsplit(b"/", 1)[-1].isdigit()
    )
    if not known:
        return 404, b'{"error":"not found"}'
    body = b'{"ok":true,"path":"' + path + b'","items":[{"id":1,"name":"tea"},{"id":2,"name":"cake"}]}'
    return 200, body


async def serve(reader, writer):
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            started = time.perf_counter_ns()
            lines = head.split(b"\r\n")
            parts = lines[0].split(b" ")
            if len(parts) != 3:
                return
            method, target, version = parts
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(b":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get(b"content-length", b"0") or 0)
            if length:
                await reader.readexactly(min(length, MAX_HEAD))
            status, body = answer_for(target) if method in (b"GET", b"HEAD") else (405, b"{}")
            connection = headers.get(b"connection", b"").lower()
            keep = connection == b"keep-alive" if version == b"HTTP/1.0" else connection != b"close"
            reason = {200: b"OK", 404: b"Not Found", 405: b"Method Not Allowed"}[status]
            shown = b"" if method == b"HEAD" else body
            writer.write(
                b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                b"Connection: %s\r\n\r\n%s"
                % (status, reason, len(body), b"keep-alive" if keep else b"close", shown)
            )
            agent = headers.get(b"user-agent", b"-").decode("latin-1")[:40]
            counters.add(time.perf_counter_ns() - started, status, agent)
            if not keep:
                await writer.drain()
                return
    finally:
        writer.close()


def stats():
    global counters
    taken, counters = counters, Counters()
    times = sorted(taken.times_ns)
    summary = {}
    if times:
        summary = {
            "median": times[len(times) // 2] / 1000,
            "mean": sum(times) / len(times) / 1000,
            "p95": times[min(len(times) - 1, int(len(times) * 0.95))] / 1000,
            "max": times[-1] / 1000,
        }
    return {"count": len(times), "statuses": taken.statuses, "agents": taken.agents, "server_us": summary}


def commands(loop, stopped):
    for line in sys.stdin:
        if line.strip() == "stats":
            # Taken on the loop's thread: no response is half counted.
            future = asyncio.run_coroutine_threadsafe(_stats(), loop)
            sys.stdout.write(json.dumps(future.result()) + "\n")
            sys.stdout.flush()
    loop.call_soon_threadsafe(stopped.set)


async def _stats():
    return stats()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=1024, limit=MAX_HEAD)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    stopped = asyncio.Event()
    threading.Thread(target=commands, args=(asyncio.get_running_loop(), stopped), daemon=True).start()
    async with server:
        await stopped.wait()


if __name__ == "__main__":
    asyncio.run(main())
