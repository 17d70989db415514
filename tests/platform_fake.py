"""A local stand-in for the few GitHub and GitLab REST routes the comment uses, on a free port.

GitHub: GET/POST /repos/{owner}/{repo}/issues/{number}/comments,
        PATCH /repos/{owner}/{repo}/issues/comments/{id}, GET /user, POST /graphql (viewer)
GitLab: GET/POST /api/v4/projects/{id}/merge_requests/{iid}/notes, PUT .../notes/{note_id},
        GET /api/v4/user

Both check their auth header, paginate (per_page, page; GitHub Link, GitLab X-Next-Page), refuse
bodies above the platform's limit with 422, and answer queued faults (status, headers) first.
A comment names its author as the platform does (GitHub `user`, GitLab `author`); the token's
comments are the bot's. GitHub's token is an installation token by default, as the job's
GITHUB_TOKEN is: GET /user answers it 403 "Resource not accessible by integration", the GraphQL
viewer answers.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

GITHUB_TOKEN = "ghs_fakeGithubToken0123456789abcdef"
GITLAB_TOKEN = "glpat-fakeGitlabToken-0123456789"
GITHUB_LIMIT = 65_536
GITLAB_LIMIT = 1_000_000
GITHUB_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
GITLAB_BOT = {"login": "project_42_bot_5f2c", "id": 77}
SOMEONE = {"login": "someone", "id": 1, "type": "User"}

_GH_LIST = re.compile(r"^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$")
_GH_ITEM = re.compile(r"^/repos/([^/]+)/([^/]+)/issues/comments/(\d+)$")
_GL_LIST = re.compile(r"^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes$")
_GL_ITEM = re.compile(r"^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$")


@dataclass
class Fault:
    method: str  # GET, POST, PATCH, PUT
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"message": "simulated"})
    path: str | None = None  # only requests whose path ends with this; None: any path


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


class Platform:
    """State of both fake platforms; `comments` holds GitHub comments and GitLab notes by thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.comments: dict[str, list[dict[str, Any]]] = {}  # "owner/repo#12" or "project!3"
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self.next_id = 1000
        self.installation_token = True  # GitHub: GET /user refuses the token, as it refuses GITHUB_TOKEN

    def thread(self, key: str) -> list[dict[str, Any]]:
        return self.comments.setdefault(key, [])

    def add(
        self, key: str, body: str, author: dict[str, Any] | None = None, system: bool = False
    ) -> dict[str, Any]:
        with self.lock:
            self.next_id += 1
            comment = {"id": self.next_id, "body": body, "user": author or SOMEONE, "system": system}
            self.thread(key).append(comment)
            return comment

    def fault(self, method: str, path: str) -> Fault | None:
        for index, fault in enumerate(self.faults):
            if fault.method == method and (fault.path is None or path.endswith(fault.path)):
                return self.faults.pop(index)
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _handle(self, method: str) -> None:
        platform = self.server.platform
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with platform.lock:
            platform.requests.append(
                Request(method, parts.path, parse_qs(parts.query), dict(self.headers.items()), body)
            )
            fault = platform.fault(method, parts.path)
        if fault is not None:
            self._send(fault.status, fault.body, fault.headers)
            return
        query = parse_qs(parts.query)
        github = not parts.path.startswith("/api/v4/")
        if github:
            if self.headers.get("Authorization") != f"Bearer {GITHUB_TOKEN}":
                self._send(401, {"message": "Bad credentials"})
                return
        elif self.headers.get("PRIVATE-TOKEN") != GITLAB_TOKEN:
            self._send(401, {"message": "401 Unauthorized"})
            return
        if self._identity(method, parts.path, body):
            return
        limit = GITHUB_LIMIT if github else GITLAB_LIMIT
        if isinstance(body, dict) and len(body.get("body", "")) > limit:
            self._send(422, {"message": f"body is too long (maximum is {limit} characters)"})
            return
        if m := (_GH_LIST.match(parts.path) or _GL_LIST.match(parts.path)):
            key = f"{m.group(1)}/{m.group(2)}#{m.group(3)}" if github else f"{m.group(1)}!{m.group(2)}"
            if method == "GET":
                self._list(key, query, github)
                return
            if method == "POST" and isinstance(body, dict) and isinstance(body.get("body"), str):
                comment = platform.add(key, body["body"], author=GITHUB_BOT if github else GITLAB_BOT)
                self._send(201, self._view(comment, key, github))
                return
        item = _GH_ITEM.match(parts.path) or _GL_ITEM.match(parts.path)
        if item and method in ("PATCH", "PUT") and isinstance(body, dict):
            comment_id = int(item.group(3))
            with platform.lock:
                for key, comments in platform.comments.items():
                    for comment in comments:
                        if comment["id"] == comment_id:
                            comment["body"] = body["body"]
                            self._send(200, self._view(comment, key, github))
                            return
            self._send(404, {"message": "Not Found"})
            return
        self._send(404, {"message": "Not Found"})

    def _identity(self, method: str, path: str, body: Any) -> bool:
        """GET /user, GitHub's GraphQL viewer: answered here (True) or not this route (False)."""
        if method == "GET" and path == "/user":
            if self.server.platform.installation_token:
                doc = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
                self._send(
                    403, {"message": "Resource not accessible by integration", "documentation_url": doc}
                )
            else:
                self._send(200, GITHUB_BOT)
        elif method == "POST" and path == "/graphql":
            if not (isinstance(body, dict) and "viewer" in str(body.get("query"))):
                self._send(200, {"errors": [{"message": "unexpected query"}]})
            else:
                viewer = {"login": GITHUB_BOT["login"], "databaseId": GITHUB_BOT["id"]}
                self._send(200, {"data": {"viewer": viewer}})
        elif method == "GET" and path == "/api/v4/user":
            self._send(200, {"id": GITLAB_BOT["id"], "username": GITLAB_BOT["login"], "bot": True})
        else:
            return False
        return True

    def _view(self, comment: dict[str, Any], key: str, github: bool) -> dict[str, Any]:
        view = {"id": comment["id"], "body": comment["body"]}
        if github:
            owner_repo, number = key.split("#")
            view["html_url"] = f"https://github.test/{owner_repo}/pull/{number}#issuecomment-{comment['id']}"
            view["user"] = comment["user"]
        else:
            view["system"] = comment["system"]
            view["author"] = {"id": comment["user"]["id"], "username": comment["user"]["login"]}
        return view

    def _list(self, key: str, query: dict[str, list[str]], github: bool) -> None:
        per_page = min(100, int(query.get("per_page", ["30"])[0]))
        page = int(query.get("page", ["1"])[0])
        with self.server.platform.lock:
            comments = list(self.server.platform.thread(key))
        chunk = comments[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(comments):
            if github:
                headers["Link"] = f'<{self.path}&page={page + 1}>; rel="next"'
            else:
                headers["X-Next-Page"] = str(page + 1)
        self._send(200, [self._view(c, key, github) for c in chunk], headers)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_PUT(self) -> None:
        self._handle("PUT")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    platform: Platform


class FakePlatform:
    """`with FakePlatform() as fake:` serves at fake.url (GitHub API) and fake.url + '/api/v4' (GitLab)."""

    def __init__(self) -> None:
        self.platform = Platform()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.platform = self.platform
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> FakePlatform:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
