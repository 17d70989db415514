"""The bounds of one real check run: how much is read and kept."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    # Production reads up to 25 MB of a body for assertions (api-checks/configuration.mdx); locally
    # several checks run at once in one process, so 5 MiB each: a longer body is cut there, assertions
    # see its first 5 MiB, and the attempt says `body_truncated`; an assertion on the body (TEXT_BODY,
    # JSON_BODY, TCP's RESPONSE_DATA) then fails, since it cannot be judged on part of it (run.py).
    body_cap_bytes: int = 5 * MIB
    header_cap_bytes: int = 256 * 1024
    excerpt_chars: int = 2048  # the first characters of a body kept as evidence
    max_redirects: int = 10
    # A TCP answer is complete when the peer closes, or when nothing more arrives for this long.
    tcp_quiet_seconds: float = 0.1
    # CA bundle for HTTPS; None: certifi's (what requests trusts). A test passes its own CA here.
    ca_file: str | None = None
    # The regexes of one attempt's assertions share the time left of the attempt's bound, at least
    # the first (an answer that came just in time still gets its assertions judged) and at most the
    # second (a worker stuck in a regex is a worker less; a sane pattern on a 5 MiB body takes ms).
    regex_min_seconds: float = 0.5
    regex_max_seconds: float = 5.0


DEFAULT_LIMITS = Limits()
