"""`{{NAME}}` in the fields of TCP and DNS checks: the definition with its variables filled in.

Production's documentation gives `{{VARIABLES}}` to API check requests only (api-checks/
configuration.mdx); its TCP and DNS monitors take literal hosts and ports. Ours: a build on a CI
runner gets its ports and names at run time (a compose network, a random port), so these fields take
the same variables, by the same rules (the session's, then the account's, then the check's; an
unknown one fails the check naming it; a secret's value is masked in everything the attempt keeps):
- TCP: `hostname`, `port`, `data` (and production's alternative `body`);
- DNS: `query`, `nameServer`, `port`.
A value is inserted as it is (`{{X}}` is not URI-encoded: these are not URLs). A port given as a
variable must come out as a number from 1 to 65535.
"""

from __future__ import annotations

from typing import TypeVar

from runner.checks.failures import FailureKind
from runner.checks.variables import Substitution, VariableError
from runner.models.check_definitions import DnsCheckDefinition, TcpCheckDefinition

TCP_FIELDS = ("hostname", "data", "body")
DNS_FIELDS = ("query", "nameServer")
SocketCheck = TypeVar("SocketCheck", TcpCheckDefinition, DnsCheckDefinition)


def rendered(check: SocketCheck, subst: Substitution) -> SocketCheck:
    """`check` with its fields' variables filled in (the same object when it has none);
    VariableError names the first variable that cannot be."""
    request = check.request
    names = TCP_FIELDS if isinstance(check, TcpCheckDefinition) else DNS_FIELDS
    changes: dict[str, object] = {}
    for name in names:
        value = getattr(request, name)
        if isinstance(value, str) and "{{" in value:
            changes[name] = subst.render(value, f"request.{name}", encode=False)
    if isinstance(request.port, str) and "{{" in request.port:
        changes["port"] = filled_port(request.port, subst, "request.port")
    if not changes:
        return check
    return check.model_copy(update={"request": request.model_copy(update=changes)})


def filled_port(port: str, subst: Substitution, field: str) -> int:
    """A port given as `{{VAR}}` (TCP, DNS, GRPC, SSL), filled in: a number from 1 to 65535, or
    VariableError naming the field (the value itself is not quoted: it may be a secret's)."""
    text = subst.render(port, field, encode=False).strip()
    if not text.isdigit() or not 0 < int(text) < 65536:
        message = f"{field}: expected a port number from 1 to 65535 once its variables are filled in"
        raise VariableError(FailureKind.INVALID_DEFINITION, message)
    return int(text)
