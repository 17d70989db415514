"""`{{NAME}}` in a check's request, replaced by the run's variables; secrets tracked for masking.

Decisions (production: detect/synthetic-monitoring/api-checks/configuration.mdx, "Accessing
environment variables"):
- Where: the URL, the body, header values, query parameter values, basic auth username and password
  (production's list; header and parameter names and assertions are left alone). A URL check's URL too.
  TCP checks' hostname, port and data, DNS checks' query, nameServer and port (ours: production's
  docs give variables to API check requests only; a local build's ports and names vary by runner):
  inserted as they are, `{{X}}` not URI-encoded there (socket_fields.py).
- Which value: the session's variables (the trigger body) first, then the account's
  `environmentVariables`, then the check's own, then the run's built-ins (CHECK_NAME, CHECK_ID,
  CHECK_TYPE and what the caller adds, e.g. ACCOUNT_ID, REGION). Names are case-sensitive.
- `{{NAME}}` is URI-encoded like JavaScript's encodeURI (production: "double brackets variables will
  be URI encoded"); `{{{NAME}}}` is inserted as it is. Spaces inside the braces are allowed.
- Helpers: `{{$UUID}}` and `{{$RANDOM_NUMBER}}` (0-10000) work; `{{REQUEST_URL}}` is the final URL
  (outside the URL itself). Others (`{{moment ...}}`) fail the check, naming the helper.
- An unknown variable fails the check with a message naming it and the field; so does a secret
  variable that arrives without a value (production never reveals one: set it in the session), and a
  secret shorter than 3 characters (it could not be masked, runner/core/redact.py).
- Every secret value of every source, in every spelling a text may carry (as is, URI-encoded, JSON-
  and HTML-escaped, and as the Basic credentials it ends up in), is masked in everything an attempt
  keeps: results, messages, evidence. In any case (upper, lower, mixed): a secret in a URL's host
  comes back lower-cased (host names ignore case; `DNS lookup failed: sess-t0ken.invalid`), and in its
  IDNA spelling when it is not ASCII (`xn--...`, as libcurl sends it).
"""

from __future__ import annotations

import base64
import functools
import random
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from runner.checks.failures import FailureKind, NotRun
from runner.core.redact import MIN_SECRET, Redactor

# encodeURI leaves these as they are (ECMA-262: reserved, unescaped and '#').
_ENCODE_URI_SAFE = ";,/?:@&=+$-_.!~*'()#"
_TEMPLATE = re.compile(r"\{\{\{\s*([^{}]*?)\s*\}\}\}|\{\{\s*([^{}]*?)\s*\}\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


# A base URL fits: the cache holds at most 256 of these (~0.5 MiB with their encodings); a larger value
# (a body, a setup script's token) is encoded each time, not kept for the process's life.
_CACHED_CHARS = 512


def encode_uri(value: str) -> str:
    return _encode_uri_cached(value) if len(value) <= _CACHED_CHARS else quote(value, safe=_ENCODE_URI_SAFE)


@functools.lru_cache(maxsize=256)  # the same few values (a base URL) fill every check of a run
def _encode_uri_cached(value: str) -> str:
    return quote(value, safe=_ENCODE_URI_SAFE)


@dataclass(frozen=True)
class Variable:
    key: str
    value: str | None
    secret: bool = False


def variables_from(items: Iterable[Any] | None) -> list[Variable]:
    """Variables from models (EnvironmentVariable, CheckEnvironmentVariable) or plain dicts."""
    out = []
    for item in items or []:
        key, value, secret = (_field(item, name) for name in ("key", "value", "secret"))
        if key:
            out.append(Variable(str(key), None if value is None else str(value), bool(secret)))
    return out


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


@dataclass(frozen=True)
class VariableSources:
    """A run's variables by where they come from, strongest first."""

    session: tuple[Variable, ...] = ()
    account: tuple[Variable, ...] = ()
    check: tuple[Variable, ...] = ()
    runtime: Mapping[str, str] = field(default_factory=dict)

    @functools.cached_property
    def substitution(self) -> Substitution:
        """These variables read and their secrets known, once for every check that uses them
        (Substitution.for_check): learning a secret's spellings costs ~0.1 ms each, a check."""
        return Substitution(self)

    def __getstate__(self) -> dict[str, object]:
        """Pickled (a worker process's Hello: job/workers.py) without the cached `substitution`: its
        Redactor holds a lock, and the run's threads may have made it while the Hello is sent."""
        state = dict(self.__dict__)
        state.pop("substitution", None)
        return state


class VariableError(NotRun):
    """The check cannot run: `kind` (unknown_variable, variable_without_value ...) and a message that
    names the variable and the field, never a value."""


class Substitution:
    """Renders one check's templates; `redact` masks every secret value it knows of."""

    def __init__(self, sources: VariableSources) -> None:
        self._values: dict[str, Variable] = {}
        self.redact = Redactor()  # masks in any case: a host name comes back lower-cased
        self._learned: tuple[str, ...] = ()  # what `redact` was given, in order (_own_redactor)
        self._shared = False  # `redact` is another Substitution's too: copied before it learns more
        for group in (sources.session, sources.account, sources.check):
            for variable in group:
                self._values.setdefault(variable.key, variable)
                # Secrets of weaker sources that a stronger one shadows still may not leak (an echo server).
                if variable.secret and variable.value:
                    self._add_secret(variable)
        # The run's built-ins (never secret), weaker than every variable: read where looked up.
        self._runtime = sources.runtime
        self.request_url: str | None = None

    def for_check(self, own: Iterable[Variable], builtins: Mapping[str, str]) -> Substitution:
        """A copy for one check, as if made from these sources with `own` (the check's variables)
        after their check variables and `builtins` (CHECK_NAME ...) under their runtime values. The
        secrets known so far are shared, not learned again; a secret the check adds (its own, a
        Basic credential) goes to a copy of them (_own_redactor): never to another check's."""
        copy = object.__new__(Substitution)
        copy._values = self._values
        copy.redact = self.redact
        copy._learned = self._learned
        copy._shared = True
        copy._runtime = {**builtins, **self._runtime}
        copy.request_url = None
        for variable in own:
            if copy._values is self._values:
                copy._values = dict(self._values)
            copy._values.setdefault(variable.key, variable)
            if variable.secret and variable.value:
                copy._add_secret(variable)
        return copy

    def _own_redactor(self) -> None:
        """`redact` made this check's own: a copy of the shared one, made the same way (the same
        values in the same order)."""
        if self._shared:
            self.redact = Redactor()
            for known in self._learned:
                self.redact.add(known)
            self._shared = False

    def _learn(self, value: str) -> None:
        self._own_redactor()
        self.redact.add(value)
        self._learned += (value,)

    def _add_secret(self, variable: Variable) -> None:
        if variable.secret and variable.value:
            self._learn(variable.value)
            self._learn(encode_uri(variable.value))
            for spelling in host_spellings(variable.value):
                self._learn(spelling)

    def environment(self) -> dict[str, str]:
        """Every variable with a value, strongest source first, as a script's process.env sees them. A
        secret shorter than MIN_SECRET is left out: it could not be masked in what the script prints."""
        variables = {
            key: v.value
            for key, v in self._values.items()
            if v.value is not None and not (v.secret and len(v.value) < MIN_SECRET)
        }
        runtime = {key: value for key, value in self._runtime.items() if key not in self._values}
        return {**variables, **runtime}

    def with_values(self, values: Mapping[str, str]) -> Substitution:
        """A copy where `values` (what a setup script left in process.env) replace or add variables;
        a secret keeps being one, and masked, under its new value."""
        self._own_redactor()  # shared with the copy: what the setup adds is masked in this attempt too
        copy = object.__new__(Substitution)
        copy._values = dict(self._values)
        copy._runtime = self._runtime
        copy.redact = self.redact
        copy._learned = self._learned
        copy._shared = False
        copy.request_url = self.request_url
        for key, value in values.items():
            old = copy._values.get(key)
            if old is None and key in self._runtime:
                old = Variable(key, self._runtime[key])
            if old is None or old.value != value:
                copy._values[key] = Variable(key, value, old.secret if old else False)
                copy._add_secret(copy._values[key])
        return copy

    def _known(self, name: str) -> bool:
        return name in self._values or name in self._runtime

    def add_secret(self, value: str) -> None:
        """Another spelling of a secret to mask (the Basic credentials built from one)."""
        self._learn(value)

    def cut(self, text: str, limit: int) -> str:
        """The first `limit` characters of `text`, its secrets masked before the cut (a secret cut
        in half at the limit would no longer be recognised)."""
        if self.redact.empty:
            return text[:limit]
        longest = max((len(s) for s in self.redact.secrets), default=0)
        return self.redact(text[: limit + longest])[:limit]

    def is_secret_text(self, text: str) -> bool:
        """True when `text` holds a secret (or is one): such a value is masked whole in evidence."""
        return bool(text) and self.redact(text) != text

    def render(self, text: str, where: str, *, encode: bool = True) -> str:
        """`text` with every template replaced; VariableError names the first that cannot be.
        `encode=False` (TCP and DNS fields, which are no URLs): `{{X}}` is inserted as it is too."""
        if "{{" not in text:
            return text

        def replace(match: re.Match[str]) -> str:
            raw = match.group(1) is not None or not encode
            name = match.group(1) if match.group(1) is not None else match.group(2)
            value = self._value(name, match.group(0), where)
            return value if raw else encode_uri(value)

        return _TEMPLATE.sub(replace, text)

    def _value(self, name: str, written: str, where: str) -> str:
        if name == "$UUID":
            return str(uuid.uuid4())
        if name == "$RANDOM_NUMBER":
            return str(random.randint(0, 10_000))  # a test value, not a secret
        if name == "REQUEST_URL" and self.request_url is not None and not self._known("REQUEST_URL"):
            return self.request_url
        if not _NAME.match(name):
            raise VariableError(
                FailureKind.UNSUPPORTED_HELPER,
                f"{where}: the template {_shown(written)} is not supported when checks run locally "
                "(variables, {{$UUID}} and {{$RANDOM_NUMBER}} are)",
            )
        variable = self._values.get(name)
        if variable is None and name in self._runtime:
            return self._runtime[name]
        if variable is None:
            raise VariableError(
                FailureKind.UNKNOWN_VARIABLE,
                f"unknown variable {name} in {where}: set it in the session's, the account's or the "
                "check's environment variables",
            )
        if variable.value is None:
            kind = "secret variable" if variable.secret else "variable"
            raise VariableError(
                FailureKind.VARIABLE_WITHOUT_VALUE,
                f"{kind} {name} in {where} has no value here (production does not reveal secret "
                "values): pass it with the session's environment variables",
            )
        if variable.secret and 0 < len(variable.value) < MIN_SECRET:
            raise VariableError(
                FailureKind.SECRET_TOO_SHORT,
                f"secret variable {name} in {where} is shorter than {MIN_SECRET} characters: it could "
                "not be masked in results, so the check does not run",
            )
        return variable.value


def _shown(written: str) -> str:
    return written if len(written) <= 60 else written[:59] + "…"


def host_spellings(value: str) -> set[str]:
    """How a secret that is not ASCII reads in a host name: each dot-separated part in IDNA (punycode,
    `xn--...`), as IDNA 2003 maps it (Python's codec) and lower-cased as IDNA 2008 keeps it (libcurl's
    libidn2: ß stays ß). Only whole labels: a secret that is part of a label is encoded with the rest
    of it, and nothing of its letters is left to find. ASCII secrets need none (case is ignored)."""
    if value.isascii():
        return set()
    spellings = set()
    for encode in (_idna_2003, _punycode_lower):
        labels = [encode(label) for label in value.split(".")]
        if None not in labels:
            spellings.add(".".join(label or "" for label in labels))
    return spellings


def _idna_2003(label: str) -> str | None:
    """None: not a label IDNA 2003 can encode."""
    try:
        return label.encode("idna").decode("ascii") if label else ""
    except UnicodeError:
        return None


def _punycode_lower(label: str) -> str | None:
    low = label.lower()
    if low.isascii():
        return low
    return "xn--" + low.encode("punycode").decode("ascii")


def basic_credentials(username: str, password: str) -> str:
    """The Authorization header's token for these credentials (to mask it when a secret is in it)."""
    return base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def template_names(text: str) -> list[str]:
    """The names `{{NAME}}` and `{{{NAME}}}` in `text` refer to, in order (helpers like `$UUID` too)."""
    return [raw or plain for raw, plain in _TEMPLATE.findall(text)]
