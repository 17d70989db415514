"""GitLab CI: a dotenv file for `artifacts:reports:dotenv`, so later jobs see the verdict as variables.

GitLab's rules for that file (docs.gitlab.com, "GitLab CI/CD artifacts reports types"): at most
5 KB, at most 20 variables on some plans, keys of ASCII letters, digits and `_`, one `KEY=value` per
line, no empty lines, no comments, no multi-line values, quotes kept as written, and `#` starts a
comment even in an unquoted value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from runner.ci.common import Log, session_ids, session_links
from runner.core.files import PlantedLink, append_text, refuse_linked_reports_folder
from runner.core.redact import Redactor
from runner.job.digest import Digest

ENV_DOTENV = "TESTSESSION_DOTENV"
DEFAULT_DOTENV = "testsession-reports/testsession.env"
MAX_BYTES = 4096  # GitLab refuses more than 5 KB (5120 bytes): keep a margin
_KEY = re.compile(r"[A-Za-z0-9_]+")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f#\"']")  # newlines, controls, comment and quote characters


def _value(text: str) -> str:
    return _UNSAFE.sub(lambda m: "%23" if m.group(0) == "#" else "", text).strip()


def _join_fitting(items: list[str], budget: int) -> str:
    """Space-separated items, whole ones only, as many as fit `budget` bytes."""
    kept: list[str] = []
    size = 0
    for item in items:
        cost = len(item.encode("utf-8")) + (1 if kept else 0)
        if size + cost > budget:
            break
        kept.append(item)
        size += cost
    return " ".join(kept)


def dotenv_values(digest: Digest, max_bytes: int = MAX_BYTES) -> dict[str, str]:
    outcome = digest.outcome
    # Every figure of the digest, as TESTSESSION_<NAME> (exit-code -> TESTSESSION_EXIT_CODE).
    values = {f"TESTSESSION_{name.upper().replace('-', '_')}": v for name, v in digest.figures().items()}
    fixed = len(format_dotenv(values).encode("utf-8"))
    keys_cost = len("TESTSESSION_SESSION_IDS=\nTESTSESSION_SESSION_LINKS=\n")
    budget = max(0, max_bytes - fixed - keys_cost)
    ids = [_value(i) for i in session_ids(outcome)]
    links = [_value(link) for link in session_links(outcome)]
    # Ids first: they are short, and a later job can rebuild a link from an id, not the reverse.
    values["TESTSESSION_SESSION_IDS"] = _join_fitting([i for i in ids if i], budget)
    budget -= len(values["TESTSESSION_SESSION_IDS"].encode("utf-8"))
    values["TESTSESSION_SESSION_LINKS"] = _join_fitting([link for link in links if link], budget)
    return values


def format_dotenv(values: Mapping[str, str]) -> str:
    lines = []
    for key, value in values.items():
        if not _KEY.fullmatch(key):
            raise ValueError(f"dotenv key {key!r}: only ASCII letters, digits and _")
        lines.append(f"{key}={_value(value)}\n")
    return "".join(lines)


def dotenv_path(environ: Mapping[str, str]) -> Path:
    return Path(environ.get(ENV_DOTENV) or DEFAULT_DOTENV)


def publish(
    digest: Digest,
    written: Mapping[str, Path],
    environ: Mapping[str, str],
    log: Log,
    redact: Redactor,
) -> list[str]:
    """Writes the dotenv file and lists it in a collapsible section; returns error lines."""
    path = dotenv_path(environ)
    text = format_dotenv({key: redact(value) for key, value in dotenv_values(digest).items()})
    try:
        refuse_linked_reports_folder(path)  # its default folder: a planted link is not written through
        path.parent.mkdir(parents=True, exist_ok=True)
        append_text(str(path), text, truncate=True)
    except PlantedLink as exc:
        return [f"could not write the dotenv file: {exc}"]
    except OSError as exc:
        return [f"could not write the dotenv file {path}: {exc.strerror or exc}"]
    with log.section("testsession_outputs", "testsession outputs (artifacts:reports:dotenv)"):
        log.line(f"dotenv: {path}")
        for line in text.splitlines():
            log.line(f"  {line}")
    return []
