"""A dotenv file read as the checkly CLI reads `--env-file` (the npm package dotenv's `parse`, 17.x).

    parse_dotenv(text) -> {KEY: value}

`KEY=value` or `KEY: value` per line, `export ` allowed before the key; a value in single, double or
back quotes may span lines (double quotes turn `\\n` and `\\r` into line breaks); an unquoted value
ends at `#`; a later key wins. No `${VAR}` expansion (dotenv's parse has none). The pattern is
dotenv's own (lib/main.js `LINE`), so a file means here what it means to `checkly test --env-file`.
"""

from __future__ import annotations

import re

_LINE = re.compile(
    r"""(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|"""
    r"""\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)""",
    re.MULTILINE,
)
_QUOTED = re.compile(r"""^(['"`])([\s\S]*)\1$""", re.MULTILINE)


def parse_dotenv(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = re.sub(r"\r\n?", "\n", text)
    for match in _LINE.finditer(lines):
        value = (match.group(2) or "").strip()
        quote = value[:1]
        value = _QUOTED.sub(r"\2", value)
        if quote == '"':
            value = value.replace("\\n", "\n").replace("\\r", "\r")
        out[match.group(1)] = value
    return out
