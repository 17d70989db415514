"""Secrets never leave the process: every text we print or write passes through a Redactor."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Collection
from contextlib import suppress
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus, urlsplit, urlunsplit

from runner.core.errors import UsageError

MASK = "***"
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")
MIN_SECRET = 3  # masking one- or two-character values would shred ordinary text
_MIN_SECRET = MIN_SECRET
_PERCENT = r"%[0-9A-F]{2}"  # this and _JSON_ESCAPED: compiled by `add` (re's cache), for a secret
# Query parameters that carry credentials in URLs people paste (GitLab's private_token, OAuth's
# access_token, S3/GCS/Azure signatures, API keys): the parameter is dropped from the URL whole.
_SECRET_PARAMS = frozenset(
    {
        "access_token", "api-key", "api_key", "apikey", "auth", "auth_token", "authorization",
        "client_secret", "code", "credential", "id_token", "jwt", "key", "pass", "passwd", "password",
        "private_token", "pwd", "refresh_token", "secret", "session", "sig", "signature", "sv", "token",
        "x-amz-credential", "x-amz-security-token", "x-amz-signature", "x-goog-credential",
        "x-goog-signature", "x-api-key",
    }
)  # fmt: skip
_SECRET_SUFFIXES = ("_token", "-token", "token", "_secret", "_password", "_key", "-key", "signature")


def check_secret(value: str | None, what: str) -> None:
    """UsageError when `value` is too short to be masked (1-2 characters): refusing is honest, where
    leaving it unmasked would break the promise that secrets never appear. `what` names the source,
    e.g. "--secret-env TOKEN" or "spec.yml: sessions[0] secret variable TOKEN"."""
    if value and len(value) < MIN_SECRET:
        raise UsageError(
            f"{what}: a secret must be at least {MIN_SECRET} characters long (it has {len(value)}); "
            "a shorter value cannot be masked in logs and reports"
        )


# Printable ASCII without a space, `@`, `?` or `#`: urlsplit and urlunsplit give such a URL back as
# it is (its scheme lower-case already).
_PLAIN_URL = re.compile(r"https?://[!-\"$-.0-9:->A-~][!-\"$-/0-9:->A-~]*")  # less #, ?, @ (and a
# host that begins with `/`: urlunsplit drops an empty one)
_JSON_ESCAPED = r'["\\\x00-\x1f]'  # what JSON writes escaped


class Redactor:
    """Holds the secret values of a run and replaces them in any text."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._json_changes = False  # some form of a secret reads differently once written as JSON
        for value in secrets or []:
            self.add(value)

    def add(self, value: str | None) -> None:
        if not value or len(value) < _MIN_SECRET:
            return
        from html import escape  # here: html.entities' table is loaded for a run with a secret only

        # A report may carry the value escaped (JSON, XML), so those spellings are secrets too.
        variants = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
        variants.add(escape(value, quote=True))
        variants.add(escape(value, quote=False))
        # And as it appears in a URL or a form (a proxy echoing the query string): %XX and +.
        for encoded in (quote(value, safe=""), quote(value), quote_plus(value)):
            variants.add(encoded)
            variants.add(re.sub(_PERCENT, lambda m: m.group().lower(), encoded))
        # And as a host name: lower-cased (matched without case below) or IDNA-encoded (xn--).
        if not value.isascii():
            with suppress(UnicodeError, ValueError):
                variants.add(value.encode("idna").decode("ascii"))
        with self._lock:
            if variants <= self._secrets:
                return
            self._secrets.update(variants)
            self._json_changes = self._json_changes or any(re.search(_JSON_ESCAPED, v) for v in variants)
            # Longest first, so a secret containing another is masked whole.
            ordered = sorted(self._secrets, key=len, reverse=True)
            # Without case: a host name comes back lower-cased (libcurl, IDNA, a proxy's page).
            self._pattern = re.compile("|".join(re.escape(s) for s in ordered), re.IGNORECASE)

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    @property
    def empty(self) -> bool:
        """True while it knows no secret: every text passes unchanged."""
        return self._pattern is None

    def absent_from_json(self, text: str) -> bool:
        """True when no secret is in `text`, the JSON of some data, and so in none of its strings:
        one search of the whole text instead of a call per string. Only when every form of every
        secret reads the same in JSON (no quote, backslash or control character: JSON escapes them,
        and the escaped form would not match); else False, and the data is masked string by string."""
        pattern = self._pattern
        if pattern is None:
            return True
        return not self._json_changes and pattern.search(text) is None

    def __call__(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(MASK, text)


def redact_data(data: Any, redact: Redactor) -> Any:
    """A copy of JSON-like data (dicts, lists, keys too) with every string passed through `redact`."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact_data(k, redact): redact_data(v, redact) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(v, redact) for v in data]
    return data


def strip_url_credentials(url: str | None, secrets: Collection[str] = ()) -> str | None:
    """https://user:token@host/x?private_token=t&ref=main -> https://host/x?ref=main: no userinfo, and
    no query or fragment parameter named like a credential or whose value is one of `secrets`.
    scp-like git URLs keep their user (git@host:path; not a secret)."""
    if not url:
        return url
    if _PLAIN_URL.fullmatch(url):
        return url  # no userinfo, query or fragment: nothing to strip (a check's URL, 10,000 times)
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed "[" in the host: still no credentials past this point
        head, sep, rest = _USERINFO.sub(r"\1", url).partition("?")
        return head + sep + _strip_params(rest, secrets) if sep else head
    if not parts.scheme:
        return url
    host = parts.netloc.rsplit("@", 1)[1] if "@" in parts.netloc else parts.netloc
    query = _strip_params(parts.query, secrets)
    fragment = _strip_params(parts.fragment, secrets) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, host, parts.path, query, fragment))


def _strip_params(query: str, secrets: Collection[str]) -> str:
    """The query without credential parameters; the others kept exactly as written."""
    if not query:
        return query
    kept = []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        name = unquote_plus(name).strip().lower()
        if name in _SECRET_PARAMS or name.endswith(_SECRET_SUFFIXES):
            continue
        if value and unquote_plus(value) in secrets:
            continue
        kept.append(item)
    return "&".join(kept)
