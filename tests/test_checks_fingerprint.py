"""An HTTP status's group key is made of its typed parts (status, request line, rule) and is the same
line the key was before (the message cleaned, its status put back): groups in state files written by
earlier versions stay known. Real requests against the loopback server, each target a hard case for
the cleaner (a query string swallowing the colon after it, ports, ids, IPv6, a number in the path)."""

from __future__ import annotations

import pytest
from checks_servers import HttpServer

from runner.checks import FailureKind, run_check
from runner.core.messages import clean_message
from runner.models.check_definitions import parse_check_definition


def key_before(message: str, status: int) -> str:
    """What fingerprint.py made of the same failure before its parts were typed."""
    return clean_message(message).replace("HTTP <n>", f"HTTP {status}", 1)


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/status/503", 503),
        ("/status/404?id=12&at=2024-01-02T03:04:05Z", 404),
        ("/status/500#frag:9", 500),
        ("/status/401/../status/401?token=abcdef0123456789", 401),
    ],
)
def test_an_http_status_key_is_the_line_it_was(web: HttpServer, path: str, status: int) -> None:
    check = {"checkType": "API", "name": "k", "request": {"method": "GET", "url": web.url(path)}}
    attempt = run_check(parse_check_definition(check), max_run_seconds=5).final
    assert attempt.error_kind is FailureKind.HTTP_STATUS and attempt.status_code == status
    assert attempt.message is not None and attempt.fingerprint is not None
    assert attempt.fingerprint == key_before(attempt.message, status)
    assert attempt.fingerprint.startswith(f"received HTTP {status} from GET http://")
