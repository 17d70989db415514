"""Error grouping: the cleaned message that makes repeated failures one group, and its stable hash.

Volatile parts of an error message (ids, timestamps, addresses, numbers, query strings) are replaced
by named placeholders, so the same failure seen twice with a different request id or time lands in the
same group. Placeholders (`<n>`, `<uuid>`, ...) rather than deletion keep the cleaned message readable
in reports ("expected status <n> but received <n>") and keep its shape: "received <n>" and "received"
stay different groups. The price: different numbers group together (a 503 and a 500 in the same
sentence are one group); the raw message of each group still carries the real values.

That price is paid by scripted failures only. A check that runs for real brings its own fingerprint
(checks/fingerprint.py: the status, the failed assertion and what it received, the error kind), which
is its group's cleaned message and hash instead: there a 503 and a 404 are two failures.
"""

from __future__ import annotations

import hashlib
import re

# Beyond this, a message is stack-trace noise; capping keeps cleaning linear and cheap for any input.
MAX_INPUT_CHARS = 100_000
HASH_CHARS = 32

_HEX = "[0-9a-fA-F]"
# A token boundary that treats letters, digits and underscore as word characters, ASCII only (Python's
# \b and \d are Unicode-aware, which would make "٣" a number in one place and not another).
_NOT_ALNUM_BEFORE = r"(?<![0-9A-Za-z_])"
_NOT_ALNUM_AFTER = r"(?![0-9A-Za-z_])"

# The patterns' text: re compiles each on the first message cleaned, and keeps it in its cache (most
# runs clean none: a run that goes well groups no failure; compiling all of them at import was ~1% of
# a one-check run's start-up).
_CONTROL = r"[\x00-\x1f\x7f-\x9f]"
_URL = r"(?i)\b([a-z][a-z0-9+.-]{1,15}://)([^\s/?#\"'<>]*)([^\s?#\"'<>]*)(?:[?#][^\s\"'<>]*)?"
_UUID = (
    _NOT_ALNUM_BEFORE + rf"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}" + _NOT_ALNUM_AFTER
)
_ISO_TIMESTAMP = (
    _NOT_ALNUM_BEFORE
    + r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    + r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
    + r"(?![0-9])"
)
_HTTP_DATE = (
    r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{1,2} "
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT\b"
)
_TIME = r"(?<![0-9:])[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?![0-9:])"
_IPV4 = r"(?<![0-9.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![0-9]|\.[0-9])(?::[0-9]{1,5}(?![0-9]))?"
# Bracketed or compressed ("::") IPv6 only: "a:b:c" text and "12:34" line numbers are never addresses.
_IPV6 = (
    r"\[(?=[0-9a-fA-F.]*:)[0-9a-fA-F:.]{2,45}\](?::[0-9]{1,5}(?![0-9]))?"
    r"|(?<![0-9A-Za-z_:.])(?=[0-9a-fA-F:.]*::)(?=[0-9a-fA-F:.]*[0-9a-fA-F])[0-9a-fA-F:.]{3,45}"
    r"(?![0-9A-Za-z_:])"
)
_HEX_PREFIXED = _NOT_ALNUM_BEFORE + r"0[xX][0-9a-fA-F]+" + _NOT_ALNUM_AFTER
# 8 or more hex characters with at least one digit: "deadbeef"-like words stay, ids and hashes go.
_HEX_ID = _NOT_ALNUM_BEFORE + r"(?=[0-9a-fA-F]*[0-9])[0-9a-fA-F]{8,}" + _NOT_ALNUM_AFTER
# A number not glued to a preceding letter ("v1", "e2e", "api2" stay), units may follow ("500ms").
_NUMBER = r"(?<![0-9A-Za-z_])[0-9]+(?:[.,][0-9]+)*"
_SPACE = r"\s+"


def _clean_url(match: re.Match[str]) -> str:
    scheme, authority, path = match.group(1), match.group(2), match.group(3)
    host = authority.rsplit("@", 1)[-1].lower()  # never keep user:password@; host names ignore case
    port_at = host.rfind(":")
    if port_at > host.rfind("]") and host[port_at + 1 :].isdigit():
        host = host[:port_at] + ":<port>"
    return f"{scheme.lower()}{host}{path}"


def clean_message(raw: str) -> str:
    """The sanitized message used for grouping; deterministic, never raises for any str."""
    text = raw[:MAX_INPUT_CHARS]
    text = re.sub(_CONTROL, " ", text)
    text = re.sub(_URL, _clean_url, text)
    text = re.sub(_UUID, "<uuid>", text)
    text = re.sub(_ISO_TIMESTAMP, "<timestamp>", text)
    text = re.sub(_HTTP_DATE, "<timestamp>", text)
    text = re.sub(_TIME, "<time>", text)
    text = re.sub(_IPV6, lambda m: "<ip>:<port>" if "]:" in m.group(0) else "<ip>", text)
    text = re.sub(_IPV4, lambda m: "<ip>:<port>" if ":" in m.group(0) else "<ip>", text)
    text = re.sub(_HEX_PREFIXED, "<hex>", text)
    text = re.sub(_HEX_ID, "<hex>", text)
    text = re.sub(_NUMBER, "<n>", text)
    return re.sub(_SPACE, " ", text).strip()


def error_hash(cleaned: str) -> str:
    """First 32 hex characters of the SHA-256 of the UTF-8 message: the same in every process."""
    # surrogatepass: a lone surrogate (possible in a str decoded from bad JSON) must hash, not raise.
    data = cleaned.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:HASH_CHARS]
