"""The header that carries the account id: one name for the client and the emulator.

Our API document names `X-Service-Account`; the production service of this API family reads
`x-checkly-account` (its CLI's REST client, packages/cli/src/rest/api.ts). Both sides take the name
from configuration and fall back to this default (docs/production-contract.md).
"""

from __future__ import annotations

import re

DEFAULT_ACCOUNT_HEADER = "X-Service-Account"
PRODUCTION_ACCOUNT_HEADER = "x-checkly-account"
_TOKEN = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")  # an HTTP field name (RFC 9110 token)


def account_header_problem(name: str) -> str | None:
    """Why `name` cannot be a header name; None when it can."""
    if not _TOKEN.match(name):
        return "must be an HTTP header name (letters, digits and - only, e.g. X-Service-Account)"
    if name.lower() in ("authorization", "content-type", "accept", "user-agent", "host"):
        return "must not be a header the client already sets"
    return None
