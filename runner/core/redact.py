"""Secrets never leave the process: every text we print or write passes through a Redactor."""

from __future__ import annotations

import html
import json
import re
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")
_MIN_SECRET = 3  # masking one- or two-character values would shred ordinary text


class Redactor:
    """Holds the secret values of a run and replaces them in any text."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        for value in secrets or []:
            self.add(value)

    def add(self, value: str | None) -> None:
        if not value or len(value) < _MIN_SECRET:
            return
        # A report may carry the value escaped (JSON, XML), so those spellings are secrets too.
        variants = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
        variants.add(html.escape(value, quote=True))
        variants.add(html.escape(value, quote=False))
        with self._lock:
            if variants <= self._secrets:
                return
            self._secrets.update(variants)
            # Longest first, so a secret containing another is masked whole.
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in ordered))

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

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


def strip_url_credentials(url: str | None) -> str | None:
    """https://user:token@host/x -> https://host/x; scp-like git URLs keep their user (not a secret)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed "[" in the host: still no credentials past this point
        return _USERINFO.sub(r"\1", url)
    if not parts.scheme or "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
