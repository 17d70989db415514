"""GRPC checks run for real against a gRPC server in this process (tests/grpc_server.py): the
standard health service and a small reflection-enabled service, plaintext and TLS."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from checks_servers import free_port
from grpc_server import PROTO, GrpcServer, start_grpc

from runner.checks import Attempt, Variable, VariableSources, run_check
from runner.checks.analysis.by_evidence import analyse_run
from runner.checks.failures import ErrorClass, FailureKind
from runner.models.check_definitions import GrpcCheckDefinition, parse_check_definition

STOPPED_WITHIN = 0.25


@pytest.fixture(scope="module")
def server() -> Iterator[GrpcServer]:
    running = start_grpc()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def tls_server(ca: trustme.CA) -> Iterator[GrpcServer]:
    cert = ca.issue_cert("127.0.0.1", "localhost")
    running = start_grpc((cert.private_key_pem.bytes(), cert.cert_chain_pems[0].bytes()))
    try:
        yield running
    finally:
        running.stop()


def grpc_check(port: int, config: dict[str, Any], assertions: list[dict[str, Any]] | None = None,
               host: str = "127.0.0.1", **fields: Any) -> GrpcCheckDefinition:  # fmt: skip
    request = {
        "url": host,
        "port": port,
        "grpcConfig": {"tls": False, **config},
        "assertions": assertions or [],
    }
    check = parse_check_definition({"name": "Greeter", "checkType": "GRPC", "request": request, **fields})
    assert isinstance(check, GrpcCheckDefinition)
    return check


def run(check: GrpcCheckDefinition, variables: VariableSources | None = None) -> Attempt:
    return run_check(check, max_run_seconds=30, variables=variables).final


def health(target: str, comparison: str = "EQUALS") -> dict[str, Any]:
    return {"source": "GRPC_HEALTHCHECK_STATUS", "comparison": comparison, "target": target}


def call(name: str, delay_ms: int = 0, **config: Any) -> dict[str, Any]:
    message = f'{{"name": "{name}", "delayMs": {delay_ms}}}'
    return {"mode": "BEHAVIOR", "method": "shop.Greeter/SayHello", "message": message, **config}


# --- HEALTH -------------------------------------------------------------------------------------------


def test_a_serving_server_passes_the_health_check_of_production_s_example(server: GrpcServer) -> None:
    """The issue's payload: GRPC_HEALTHCHECK_STATUS EQUALS "1" and RESPONSE_TIME LESS_THAN "1000"."""
    fast = {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "1000"}
    attempt = run(grpc_check(server.port, {"mode": "HEALTH"}, [health("1"), fast]))
    assert attempt.passed and not attempt.degraded, attempt.message
    first = attempt.assertions[0]
    assert (first.source, first.actual, first.passed) == ("GRPC_HEALTHCHECK_STATUS", "1", True)
    assert attempt.request is not None and attempt.request.kind == "GRPC"
    assert attempt.request.target == f"127.0.0.1:{server.port}"
    assert attempt.request.method == "/grpc.health.v1.Health/Check"
    assert attempt.body_excerpt is not None and attempt.body_excerpt.startswith(
        "HEALTH grpc.health.v1.Health/Check (service (the server)): status 0 OK, SERVING (1)"
    )
    assert attempt.timing is not None and attempt.timing.connect_ms is not None
    assert attempt.timing.first_byte_ms is not None


def test_not_serving_fails_by_its_assertion_and_without_one(server: GrpcServer) -> None:
    asserted = run(grpc_check(server.port, {"mode": "HEALTH", "service": "shop.Down"}, [health("1")]))
    assert (asserted.error_class, asserted.error_kind) == (
        ErrorClass.ASSERTION_FAILURE,
        FailureKind.ASSERTION,
    )
    assert asserted.message == "GRPC_HEALTHCHECK_STATUS EQUALS 1: received 2"
    bare = run(grpc_check(server.port, {"mode": "HEALTH", "service": "shop.Down"}))
    assert bare.error_kind is FailureKind.GRPC_HEALTH and bare.error_class is ErrorClass.ASSERTION_FAILURE
    assert bare.message == (
        f"health status 2 NOT_SERVING for shop.Down, expected 1 SERVING: 127.0.0.1:{server.port}"
    )
    analysis, rule = analyse_run(bare, bare.message, "GRPC", "Greeter")
    assert rule == "rules-v1/run-grpc-health" and "NOT_SERVING" in analysis.rootCause
    # A check that wants NOT_SERVING says so, and passes.
    assert run(grpc_check(server.port, {"mode": "HEALTH", "service": "shop.Down"}, [health("2")])).passed


def test_the_server_s_status_decides_as_it_changes(server: GrpcServer) -> None:
    from grpc_health.v1 import health_pb2

    check = grpc_check(server.port, {"mode": "HEALTH", "service": "shop.Flip"}, [health("1")])
    server.health.set("shop.Flip", health_pb2.HealthCheckResponse.SERVING)
    assert run(check).passed
    server.health.set("shop.Flip", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert run(check).message == "GRPC_HEALTHCHECK_STATUS EQUALS 1: received 2"


def test_an_unknown_service_answers_not_found_and_the_status_is_null(server: GrpcServer) -> None:
    attempt = run(grpc_check(server.port, {"mode": "HEALTH", "service": "no.Such"}))
    assert attempt.error_kind is FailureKind.GRPC_STATUS
    assert attempt.message == f"gRPC status 5 NOT_FOUND: no details: 127.0.0.1:{server.port}"
    asserted = run(grpc_check(server.port, {"mode": "HEALTH", "service": "no.Such"}, [health("1")]))
    assert asserted.message == "GRPC_HEALTHCHECK_STATUS EQUALS 1: received null"


def test_nothing_listening_is_connection_refused() -> None:
    port = free_port()
    attempt = run(grpc_check(port, {"mode": "HEALTH"}, [health("1")]))
    assert (attempt.error_class, attempt.error_kind) == (
        ErrorClass.NETWORK_ERROR,
        FailureKind.CONNECTION_REFUSED,
    )
    assert attempt.message == f"connection refused: 127.0.0.1:{port}" and attempt.network_failure


# --- BEHAVIOR -----------------------------------------------------------------------------------------


def test_a_unary_call_through_reflection_with_response_and_metadata_assertions(server: GrpcServer) -> None:
    assertions = [
        {"source": "GRPC_STATUS_CODE", "comparison": "EQUALS", "target": "0"},
        {"source": "GRPC_RESPONSE", "property": "$.message", "comparison": "EQUALS", "target": "hello ada"},
        {"source": "GRPC_RESPONSE", "property": "$.length", "comparison": "GREATER_THAN", "target": "5"},
        {"source": "TEXT_BODY", "comparison": "CONTAINS", "target": '"message":"hello ada"'},
        {
            "source": "GRPC_METADATA",
            "property": "x-served-by",
            "comparison": "EQUALS",
            "target": "test-greeter",
        },
        {"source": "GRPC_METADATA", "property": "x-echo", "comparison": "EQUALS", "target": "t0ken-of-ada"},
    ]
    config = call("ada", metadata=[{"key": "x-echo", "value": "{{ECHO}}"}])
    secret = VariableSources(session=(Variable("ECHO", "t0ken-of-ada", secret=True),))
    attempt = run(grpc_check(server.port, config, assertions), secret)
    assert attempt.passed, attempt.message
    assert all(a.passed for a in attempt.assertions)
    assert attempt.request is not None and attempt.request.method == "/shop.Greeter/SayHello"
    # The secret reached the server (the assertion on its echo passed) and no evidence keeps it.
    assert "t0ken-of-ada" not in repr(attempt)


def test_an_error_status_fails_unless_an_assertion_expects_it(server: GrpcServer) -> None:
    attempt = run(grpc_check(server.port, call("fail")))
    assert (
        attempt.error_kind is FailureKind.GRPC_STATUS and attempt.error_class is ErrorClass.ASSERTION_FAILURE
    )
    assert attempt.message == f"gRPC status 5 NOT_FOUND: no such person: 127.0.0.1:{server.port}"
    analysis, rule = analyse_run(attempt, attempt.message, "GRPC", "Greeter")
    assert rule == "rules-v1/run-grpc-status" and "NOT_FOUND" in analysis.rootCause
    expected = [{"source": "GRPC_STATUS_CODE", "comparison": "EQUALS", "target": "5"}]
    assert run(grpc_check(server.port, call("fail"), expected)).passed


def test_an_unknown_method_or_service_names_what_reflection_lists(server: GrpcServer) -> None:
    method = run(grpc_check(server.port, call("ada", method="shop.Greeter/SayBye")))
    assert method.error_kind is FailureKind.GRPC_REFLECTION
    assert method.message == (
        f"the service shop.Greeter has no method SayBye (it has SayHello): 127.0.0.1:{server.port}"
    )
    service = run(grpc_check(server.port, call("ada", method="shop.Nope/SayHello")))
    assert service.error_kind is FailureKind.GRPC_REFLECTION and service.message is not None
    assert "reflection does not know the service shop.Nope (it lists " in service.message
    assert "shop.Greeter" in service.message
    analysis, rule = analyse_run(service, service.message, "GRPC", "Greeter")
    assert rule == "rules-v1/run-grpc-reflection" and "reflection" in analysis.codeFix


def test_a_request_message_that_is_not_the_method_s_json_is_a_definition_error(server: GrpcServer) -> None:
    config = {**call("ada"), "message": '{"nam": "ada"}'}
    attempt = run(grpc_check(server.port, config))
    assert attempt.error_class is ErrorClass.CONFIGURATION_ERROR
    assert attempt.message is not None and attempt.message.startswith(
        "request.grpcConfig.message: not a shop.HelloRequest in JSON ("
    )


def test_slow_answers_degrade_then_time_out(server: GrpcServer) -> None:
    degraded = run(grpc_check(server.port, call("ada", 300), degradedResponseTime=100, maxResponseTime=3000))
    assert degraded.passed and degraded.degraded
    timed_out = run(grpc_check(server.port, call("ada", 2000), maxResponseTime=300))
    assert timed_out.error_class is ErrorClass.TIMEOUT and timed_out.duration_ms < 2000  # cut off
    assert (
        timed_out.message
        == f"timeout: no answer within the maxResponseTime of 300 ms: 127.0.0.1:{server.port}"
    )
    assert analyse_run(timed_out, timed_out.message, "GRPC", "Greeter")[1] == "rules-v1/run-timeout"


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
def test_a_stopped_call_is_cancelled_within_a_quarter_second(server: GrpcServer) -> None:
    stop, set_at = threading.Event(), []
    threading.Timer(0.3, lambda: (set_at.append(time.monotonic()), stop.set())).start()
    ran = run_check(grpc_check(server.port, call("ada", 5000)), max_run_seconds=30, stop=stop)
    assert ran.cancelled and time.monotonic() - set_at[0] < STOPPED_WITHIN


def test_without_reflection_the_check_s_own_proto_finds_the_method(tmp_path: Path) -> None:
    """Production's PROTO_FILE: "the runner compiles it locally — no server reflection required"."""
    closed = start_grpc(reflection_on=False)
    try:
        answer = [
            {
                "source": "GRPC_RESPONSE",
                "property": "$.message",
                "comparison": "EQUALS",
                "target": "hello ada",
            }
        ]
        reflected = run(grpc_check(closed.port, call("ada"), answer))
        assert reflected.error_kind is FailureKind.GRPC_REFLECTION and reflected.message is not None
        assert reflected.message.startswith("failed to list services via reflection (UNIMPLEMENTED")
        own = {**call("ada"), "serviceDefinition": "PROTO_FILE", "protoContent": PROTO}
        attempt = run(grpc_check(closed.port, own, answer))
        assert attempt.passed, attempt.message
        broken = {**own, "protoContent": PROTO.replace("string name = 1;", "strin name = 1;")}
        invalid = run(grpc_check(closed.port, broken))
        assert invalid.error_class is ErrorClass.CONFIGURATION_ERROR and invalid.message is not None
        assert invalid.message.startswith(
            "request.grpcConfig.protoContent: does not compile: protoContent:4:"
        )
        elsewhere = run(grpc_check(closed.port, {**own, "method": "shop.Other/SayHello"}))
        assert elsewhere.message == f"the protoContent has no service shop.Other: 127.0.0.1:{closed.port}"
    finally:
        closed.stop()


# --- TLS ----------------------------------------------------------------------------------------------


def test_tls_trusts_the_ca_the_environment_gives(
    tls_server: GrpcServer, ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = grpc_check(tls_server.port, {"mode": "HEALTH", "tls": True}, [health("1")])
    monkeypatch.delenv("NODE_EXTRA_CA_CERTS", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    untrusted = run(check)
    assert (untrusted.error_class, untrusted.error_kind) == (ErrorClass.NETWORK_ERROR, FailureKind.TLS)
    assert untrusted.message == (
        f"TLS handshake failed (CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate): "
        f"127.0.0.1:{tls_server.port}"
    )
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", str(tmp_path / "ca.pem"))
    assert run(check).passed
    by_name = grpc_check(tls_server.port, {**call("ada"), "tls": True}, host="localhost")
    attempt = run(by_name)
    assert attempt.passed, attempt.message
    assert attempt.body_excerpt is not None and '"message":"hello ada"' in attempt.body_excerpt


def test_plaintext_to_a_tls_server_fails_as_a_network_error(tls_server: GrpcServer) -> None:
    attempt = run(grpc_check(tls_server.port, {"mode": "HEALTH", "tls": False}))
    assert attempt.error_class is ErrorClass.NETWORK_ERROR and attempt.network_failure


# --- definitions --------------------------------------------------------------------------------------


def test_a_port_given_as_a_variable(server: GrpcServer) -> None:
    check = grpc_check("{{GRPC_PORT}}", {"mode": "HEALTH"}, [health("1")])  # type: ignore[arg-type]
    assert run(check, VariableSources(session=(Variable("GRPC_PORT", str(server.port)),))).passed
    wrong = run(check, VariableSources(session=(Variable("GRPC_PORT", "grpc"),)))
    assert wrong.error_class is ErrorClass.CONFIGURATION_ERROR
    assert (
        wrong.message
        == "request.port: expected a port number from 1 to 65535 once its variables are filled in"
    )


LAZY_PROBE = """
import sys
from runner.checks import run_check
from runner.models.check_definitions import parse_check_definition
def loaded():
    return sorted(m for m in ("grpc", "google.protobuf", "grpc_tools", "cryptography") if m in sys.modules)
request = {"url": "127.0.0.1", "port": int(sys.argv[1]), "grpcConfig": {"mode": "HEALTH", "tls": False}}
check = parse_check_definition({"name": "g", "checkType": "GRPC", "request": request})
print(loaded())
run_check(check, max_run_seconds=5)
print(loaded())
"""


def test_the_grpc_libraries_load_only_when_a_grpc_check_runs() -> None:
    import subprocess
    import sys

    argv = [sys.executable, "-c", LAZY_PROBE, str(free_port())]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    before, after = done.stdout.splitlines()
    assert before == "[]", done.stderr  # parsing a GRPC definition loads none of them
    # Running one loads gRPC and protobuf (grpc itself looks for grpc_tools), not cryptography (SSL's).
    assert "'google.protobuf', 'grpc'" in after and "cryptography" not in after, after


def test_a_typo_in_a_hand_written_check_is_named() -> None:
    from runner.models.check_definitions import hand_written_problems

    typo = {
        "name": "g",
        "checkType": "GRPC",
        "request": {"url": "h", "port": 1, "grpcConfig": {"mod": "HEALTH"}},
    }
    ((loc, message),) = hand_written_problems(typo)
    assert loc == ("request", "grpcConfig", "mod") and "did you mean 'mode'?" in message


def test_what_cannot_run_here_or_is_wrong_is_named() -> None:
    label = grpc_check(1, {"mode": "HEALTH"}, [health("SERVING")])
    assert label.problems() == [
        "request.assertions[0].target: expected a number: 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING, "
        "3 SERVICE_UNKNOWN (1 for SERVING)"
    ]
    assert grpc_check(1, {"mode": "BEHAVIOR"}).problems() == [
        "request.grpcConfig.method: required in BEHAVIOR mode: package.Service/Method"
    ]
    proto = grpc_check(1, {**call("a"), "serviceDefinition": "PROTO_FILE"})
    assert proto.problems() == [
        "request.grpcConfig.protoContent: required with serviceDefinition PROTO_FILE: the .proto file's text"
    ]
    skip_ssl = {"url": "h", "port": 1, "skipSSL": True, "grpcConfig": {}}
    skip = parse_check_definition({"name": "g", "checkType": "GRPC", "request": skip_ssl})
    assert skip.local_support() is not None and "skipSSL" in str(skip.local_support())
    defaults = parse_check_definition({"name": "g", "checkType": "GRPC", "request": {"url": "h", "port": 1}})
    assert isinstance(defaults, GrpcCheckDefinition)
    assert (defaults.request.grpcConfig.mode, defaults.request.grpcConfig.tls) == ("BEHAVIOR", True)
    assert defaults.response_limits_ms() == (10_000, 20_000)
    timeout = grpc_check(1, {"mode": "HEALTH"}, maxResponseTime=20_000)
    timeout = timeout.model_copy(update={"request": timeout.request.model_copy(update={"timeout": 5})})
    assert timeout.attempt_limit() == (5.0, "the timeout of 5 s")
