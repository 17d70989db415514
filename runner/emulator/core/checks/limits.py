"""The bounds of one real check run: how much is read and kept."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    # Production reads up to 25 MB of a body for assertions (api-checks/configuration.mdx); locally
    # several checks run at once in one process, so 5 MiB each: a longer body is cut there, assertions
    # see its first 5 MiB, and the attempt says `body_truncated`.
    body_cap_bytes: int = 5 * MIB
    header_cap_bytes: int = 256 * 1024
    excerpt_chars: int = 2048  # the first characters of a body kept as evidence
    max_redirects: int = 10
    # A TCP answer is complete when the peer closes, or when nothing more arrives for this long.
    tcp_quiet_seconds: float = 0.1
    # CA bundle for HTTPS; None: certifi's (what requests trusts). A test passes its own CA here.
    ca_file: str | None = None


DEFAULT_LIMITS = Limits()
