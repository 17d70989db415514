"""One command per API operation: `testsession sessions get ID`, `testsession dashboards create FILE`, ...

Each prints the service's answer as JSON on stdout (a delete or cancel prints nothing). Handlers
just raise: run_handler turns errors into one line on stderr and the exit code.
Heavy imports (pydantic, requests, yaml) happen inside the handlers, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from runner.cli.checks_export import checks_export
from runner.cli.common import Connection, Context, add_connection_options, test_session_id
from runner.core.exitcodes import ExitCode

if TYPE_CHECKING:
    from pydantic import BaseModel

    from runner.client import ApiClient
    from runner.models import RequestModel

DEFAULT_WAIT_TIMEOUT = 600.0
SESSION = ("test session", "id")  # what a command's id names, and its argument (see _naming)


# --- helpers used by the handlers ---------------------------------------------------------------


def _print_json(answer: BaseModel | None) -> None:
    if answer is None:
        return
    import json

    print(json.dumps(answer.model_dump(mode="json"), indent=2, ensure_ascii=False))


def load_body_file(path: str) -> dict[str, Any]:
    """A request body from a YAML or JSON file ("-" = stdin); UsageError naming the file otherwise."""
    import yaml

    from runner.core.errors import UsageError
    from runner.core.files import MAX_INPUT_BYTES, InputFileError, read_input_text

    name = "stdin" if path == "-" else path
    try:
        text = (
            sys.stdin.read(MAX_INPUT_BYTES + 1) if path == "-" else read_input_text(path, "request body file")
        )
        if len(text) > MAX_INPUT_BYTES:
            raise InputFileError(f"stdin: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB of text")
    except InputFileError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: cannot read ({type(exc).__name__})") from None
    try:
        # JSON is (for every body we accept) valid YAML, so one parser reads both.
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "not valid YAML or JSON"
        where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark is not None else ""
        raise UsageError(f"{name}:{where} {problem}") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise UsageError(f"{name}: (body): must be a mapping (object) of fields, got {kind}")
    return data


def _body(model: type[RequestModel], data: dict[str, Any], what: str) -> Any:
    """Validates a body before anything is sent; every problem on one line, naming field and rule."""
    from runner.client import validate_request
    from runner.core.errors import InvalidRequestError

    try:
        return validate_request(model, data, what)
    except InvalidRequestError as exc:
        raise InvalidRequestError(str(exc).replace("\n", "; ")) from None


def _file_body(args: argparse.Namespace, operation: str) -> Any:
    """The body of `operation` read from FILE ("-" = stdin), checked by the operation's request model
    (its row in runner.models.operations) before anything is sent."""
    from runner.models.operations import BY_NAME

    model = BY_NAME[operation].request
    assert model is not None, operation
    return _body(model, load_body_file(args.file), "stdin" if args.file == "-" else args.file)


def _client(args: argparse.Namespace, ctx: Context, retry_budget: float | None = None) -> ApiClient:
    if args.verbose:
        import logging

        logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="testsession: %(message)s")
    return Connection.from_args(args).client(ctx.redact, retry_budget)


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return number


# --- handlers -----------------------------------------------------------------------------------


def sessions_trigger(args: argparse.Namespace, ctx: Context) -> int:
    body = _file_body(args, "trigger")
    with _client(args, ctx) as client:
        _print_json(client.trigger(body))
    return int(ExitCode.OK)


def sessions_get(args: argparse.Namespace, ctx: Context) -> int:
    with _client(args, ctx) as client:
        _print_json(client.get_session(args.id))
    return int(ExitCode.OK)


def sessions_wait(args: argparse.Namespace, ctx: Context) -> int:
    import time

    from runner.client.polling import wait_for_session
    from runner.core.errors import DeadlineExceeded

    deadline = time.monotonic() + args.timeout
    with _client(args, ctx, retry_budget=args.timeout) as client:
        session = wait_for_session(client, args.id, deadline)
        if session is None:
            raise DeadlineExceeded(f"test session {args.id} still running after {args.timeout:g}s")
        _print_json(session)
    return int(ExitCode.OK)


def sessions_cancel(args: argparse.Namespace, ctx: Context) -> int:
    with _client(args, ctx) as client:
        client.cancel(args.id)
    return int(ExitCode.OK)


def error_groups_get(args: argparse.Namespace, ctx: Context) -> int:
    with _client(args, ctx) as client:
        _print_json(client.get_error_group(args.id))
    return int(ExitCode.OK)


def test_session_error_groups_get(args: argparse.Namespace, ctx: Context) -> int:
    with _client(args, ctx) as client:
        _print_json(client.get_test_session_error_group(args.id))
    return int(ExitCode.OK)


def rca_get(args: argparse.Namespace, ctx: Context) -> int:
    import time

    from runner.client.polling import wait_for_analysis
    from runner.core.errors import DeadlineExceeded

    with _client(args, ctx, retry_budget=args.timeout if args.wait else None) as client:
        if not args.wait:
            _print_json(client.get_analysis(args.id))
            return int(ExitCode.OK)
        deadline = time.monotonic() + args.timeout
        analysis = wait_for_analysis(client, args.id, deadline)
        if not analysis.is_completed:
            raise DeadlineExceeded(
                f"root cause analysis {args.id} still {analysis.status} after {args.timeout:g}s"
            )
        _print_json(analysis)
    return int(ExitCode.OK)


def rca_create(args: argparse.Namespace, ctx: Context) -> int:
    from runner.models import CreateAnalysisRequest

    # Validate the context before anything is sent (at most 256 characters).
    _body(CreateAnalysisRequest, {"userContext": args.context}, "--context")
    with _client(args, ctx) as client:
        if args.error_group:
            answer = client.create_error_group_analysis(args.error_group, args.context)
        else:
            answer = client.create_test_session_error_group_analysis(
                args.test_session_error_group, args.context
            )
        _print_json(answer)
    return int(ExitCode.OK)


def incidents_add_update(args: argparse.Namespace, ctx: Context) -> int:
    from runner.models import IncidentUpdateRequest

    data: dict[str, Any] = {"description": args.description, "notifySubscribers": args.notify}
    if args.status is not None:
        data["status"] = args.status
    body = _body(IncidentUpdateRequest, data, "incident update")
    with _client(args, ctx) as client:
        _print_json(client.add_incident_update(args.incident_id, body))
    return int(ExitCode.OK)


def maintenance_windows_delete(args: argparse.Namespace, ctx: Context) -> int:
    with _client(args, ctx) as client:
        client.delete_maintenance_window(args.id)
    return int(ExitCode.OK)


def maintenance_windows_delete_maintenance(args: argparse.Namespace, ctx: Context) -> int:
    with _client(args, ctx) as client:
        client.delete_maintenance(args.id, args.maintenance_id)
    return int(ExitCode.OK)


def client_certificates_delete(args: argparse.Namespace, ctx: Context) -> int:
    with _client(args, ctx) as client:
        client.delete_client_certificate(args.id)
    return int(ExitCode.OK)


def dashboards_create(args: argparse.Namespace, ctx: Context) -> int:
    from runner.core.errors import ConflictError

    body = _file_body(args, "create_dashboard")
    with _client(args, ctx) as client:
        try:
            _print_json(client.create_dashboard(body))
        except ConflictError as exc:
            raise _taken(body, exc) from None
    return int(ExitCode.OK)


def _taken(body: Any, exc: Any) -> Exception:
    """A 409 on a dashboard: the user must choose another URL or domain (exit 2); say which."""
    from runner.core.errors import UsageError

    given = {name: getattr(body, name, None) for name in ("customUrl", "customDomain")}
    given = {name: value for name, value in given.items() if value}
    named = {name: value for name, value in given.items() if name.lower() in exc.message.lower()}
    shown = " or ".join(f"{name} {value!r}" for name, value in (named or given).items()) or "its URL"
    return UsageError(
        f"dashboard: {shown} is already taken (the service answered 409: {exc.message}); choose another"
    )


def _check_json(check: Any) -> dict[str, Any]:
    """A check as the service sent it (no defaults added): what export and a reader both want."""
    data: dict[str, Any] = check.as_sent()
    return data


def variables_list(args: argparse.Namespace, ctx: Context) -> int:
    import json

    with _client(args, ctx) as client:
        variables = client.list_variables()
    print(json.dumps([v.model_dump(mode="json") for v in variables], indent=2, ensure_ascii=False))
    return int(ExitCode.OK)


def checks_list(args: argparse.Namespace, ctx: Context) -> int:
    import json

    with _client(args, ctx) as client:
        checks = client.list_checks(tags=args.tag or (), check_type=args.check_type, search=args.search)
    print(json.dumps([_check_json(check) for check in checks], indent=2, ensure_ascii=False))
    return int(ExitCode.OK)


def checks_get(args: argparse.Namespace, ctx: Context) -> int:
    import json

    with _client(args, ctx) as client:
        check = client.get_check(args.id)
    print(json.dumps(_check_json(check), indent=2, ensure_ascii=False))
    return int(ExitCode.OK)


def checks_update(args: argparse.Namespace, ctx: Context) -> int:
    import warnings

    body = _file_body(args, "update_check")
    with _client(args, ctx) as client, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        check = client.update_check(args.id, body, auto_assign_alerts=not args.no_auto_assign_alerts)
    for warning in caught:
        print(f"testsession: warning: {warning.message}", file=sys.stderr)
    _print_json(check)
    return int(ExitCode.OK)


# --- parsers ------------------------------------------------------------------------------------


def _leaf(
    group: Any, name: str, handler: Any, help_text: str, names: tuple[str, ...] = ()
) -> argparse.ArgumentParser:
    """`names`: what the command's id arguments name ("test session"), for its 404 message."""
    parser: argparse.ArgumentParser = group.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(func=_naming(handler, names) if names else handler)
    return parser


def _naming(handler: Any, names: tuple[str, ...]) -> Any:
    """A 404 of the service for an id the user typed is the user's to fix: exit 2, naming the id.
    A 404 that is not the service's own answer (a proxy's page) stays a service error (exit 4)."""

    def run(args: argparse.Namespace, ctx: Context) -> int:
        from runner.core.errors import NotFoundError, UnknownIdError

        try:
            return int(handler(args, ctx))
        except NotFoundError as exc:
            if not exc.service_body:
                raise
            what, attrs = names[0], names[1:]
            ids = " / ".join(str(getattr(args, a)) for a in attrs if getattr(args, a, None))
            raise UnknownIdError(
                f"no {what} with id {ids} in account {args.account_id} "
                f"(the service answered 404: {exc.message}); check the id"
            ) from None

    return run


def _group(subparsers: Any, name: str, help_text: str) -> Any:
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text, description=help_text)

    def usage(args: argparse.Namespace, ctx: Context) -> int:
        # `testsession sessions` alone: show what the group offers.
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)

    parser.set_defaults(func=usage)
    return parser.add_subparsers(dest=f"{name.replace('-', '_')}_command", metavar="COMMAND")


def _with_connection(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    add_connection_options(parser)
    return parser


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    body_help = "request body, YAML or JSON file ('-' reads stdin)"

    sessions = _group(subparsers, "sessions", "trigger, read, wait for and cancel test sessions")
    p = _leaf(sessions, "trigger", sessions_trigger, "start a test session (POST /v1/test-sessions/trigger)")
    p.add_argument("--file", "-f", required=True, metavar="BODY", help=body_help)
    _with_connection(p)
    p = _leaf(sessions, "get", sessions_get, "read a test session", SESSION)
    p.add_argument("id", metavar="ID", type=test_session_id, help="test session id (a UUID)")
    _with_connection(p)
    p = _leaf(
        sessions, "wait", sessions_wait, "long-poll until the session is final (exit 3 on timeout)", SESSION
    )
    p.add_argument("id", metavar="ID", type=test_session_id, help="test session id (a UUID)")
    p.add_argument(
        "--timeout",
        type=_positive,
        default=DEFAULT_WAIT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up after this long, exit 3 (default {DEFAULT_WAIT_TIMEOUT:g})",
    )
    _with_connection(p)
    p = _leaf(sessions, "cancel", sessions_cancel, "cancel a running test session", SESSION)
    p.add_argument("id", metavar="ID", type=test_session_id, help="test session id (a UUID)")
    _with_connection(p)

    groups = _group(subparsers, "error-groups", "read check error groups")
    p = _leaf(groups, "get", error_groups_get, "read a check error group", ("error group", "id"))
    p.add_argument("id", metavar="ID", help="error group id")
    _with_connection(p)

    ts_groups = _group(subparsers, "test-session-error-groups", "read test-session error groups")
    p = _leaf(
        ts_groups,
        "get",
        test_session_error_groups_get,
        "read a test-session error group",
        ("test-session error group", "id"),
    )
    p.add_argument("id", metavar="ID", help="test-session error group id")
    _with_connection(p)

    rca = _group(subparsers, "rca", "root cause analyses: read and create")
    p = _leaf(
        rca,
        "get",
        rca_get,
        "read a root cause analysis (pending or completed)",
        ("root cause analysis", "id"),
    )
    p.add_argument("id", metavar="ID", help="analysis id")
    p.add_argument("--wait", action="store_true", help="poll until the analysis is completed")
    p.add_argument(
        "--timeout",
        type=_positive,
        default=DEFAULT_WAIT_TIMEOUT,
        metavar="SECONDS",
        help=f"with --wait: give up after this long, exit 3 (default {DEFAULT_WAIT_TIMEOUT:g})",
    )
    _with_connection(p)
    p = _leaf(
        rca,
        "create",
        rca_create,
        "ask for a root cause analysis of an error group",
        ("error group", "error_group", "test_session_error_group"),
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--error-group", metavar="ID", help="a check error group id")
    target.add_argument("--test-session-error-group", metavar="ID", help="a test-session error group id")
    p.add_argument(
        "--context", metavar="TEXT", help="extra context for the analysis (at most 256 characters)"
    )
    _with_connection(p)

    incidents = _group(subparsers, "incidents", "status page incidents")
    p = _leaf(
        incidents,
        "add-update",
        incidents_add_update,
        "add an update to a status page incident",
        ("incident", "incident_id"),
    )
    p.add_argument("incident_id", metavar="INCIDENT_ID", help="incident id")
    p.add_argument("--description", required=True, metavar="TEXT", help="the update's text")
    p.add_argument(
        "--status", metavar="S", help="INVESTIGATING, IDENTIFIED, MONITORING or RESOLVED (checked on use)"
    )
    p.add_argument("--notify", action="store_true", help="notify the status page's subscribers")
    _with_connection(p)

    windows = _group(subparsers, "maintenance-windows", "delete maintenance windows and maintenances")
    p = _leaf(
        windows,
        "delete",
        maintenance_windows_delete,
        "permanently delete a maintenance window",
        ("maintenance window", "id"),
    )
    p.add_argument("id", metavar="ID", help="maintenance window id")
    _with_connection(p)
    p = _leaf(
        windows,
        "delete-maintenance",
        maintenance_windows_delete_maintenance,
        "delete one maintenance of a window",
        ("maintenance window / maintenance", "id", "maintenance_id"),
    )
    p.add_argument("id", metavar="ID", help="maintenance window id")
    p.add_argument("maintenance_id", metavar="MAINTENANCE_ID", help="maintenance id")
    _with_connection(p)

    certificates = _group(subparsers, "client-certificates", "delete client certificates")
    p = _leaf(
        certificates,
        "delete",
        client_certificates_delete,
        "permanently delete a client certificate",
        ("client certificate", "id"),
    )
    p.add_argument("id", metavar="ID", help="client certificate id")
    _with_connection(p)

    dashboards = _group(subparsers, "dashboards", "create dashboards")
    p = _leaf(
        dashboards, "create", dashboards_create, "create a dashboard (409 when its URL or domain is taken)"
    )
    p.add_argument("file", metavar="FILE", help=body_help)
    _with_connection(p)

    variables = _group(subparsers, "variables", "the account's environment variables")
    p = _leaf(
        variables,
        "list",
        variables_list,
        "list the account's environment variables (every page; a secret's value is null)",
    )
    _with_connection(p)

    checks = _group(subparsers, "checks", "list, read and export checks; the deprecated check update")
    tag_help = "only checks with this tag (repeat for several: a check with any of them)"
    p = _leaf(checks, "list", checks_list, "list the account's checks with their definitions (every page)")
    p.add_argument("--tag", action="append", metavar="TAG", help=tag_help)
    p.add_argument("--check-type", metavar="TYPE", help="only checks of this type (API, BROWSER, ...)")
    p.add_argument("--search", metavar="TEXT", help="only checks whose name contains TEXT (any case)")
    _with_connection(p)
    p = _leaf(checks, "get", checks_get, "read one check with its definition (secret values are null)")
    p.add_argument("id", metavar="ID", help="check id")
    _with_connection(p)
    p = _leaf(
        checks,
        "export",
        checks_export,
        "write the account's checks as a checks file that runs them on this machine "
        "(testsession run --checks FILE); secrets are read from the environment, never written",
    )
    p.add_argument("--tag", action="append", metavar="TAG", help=tag_help)
    p.add_argument("-o", "--output", metavar="FILE", help="the file to write (default: stdout)")
    p.add_argument(
        "--format",
        choices=("checks", "world"),
        default="checks",
        help="checks: a checks file, for run --checks (default); world: a world file, for "
        "run --emulator --world (settings, an account whose key is read from TESTSESSION_API_KEY)",
    )
    _with_connection(p)
    p = _leaf(
        checks,
        "update",
        checks_update,
        "update a check (deprecated: PUT /v1/checks/api/{id} and PUT /v1/checks/browser/{id} replace it)",
        ("check", "id"),
    )
    p.add_argument("id", metavar="ID", help="check id")
    p.add_argument("file", metavar="FILE", help=body_help)
    p.add_argument(
        "--no-auto-assign-alerts",
        action="store_true",
        help="send autoAssignAlerts=false (default true: subscribe to all alert channels)",
    )
    _with_connection(p)


__all__ = ["load_body_file", "register"]
