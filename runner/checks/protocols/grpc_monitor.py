"""GRPC checks: a gRPC health check (HEALTH) or one unary call (BEHAVIOR), judged by the assertions.

Production's rules (grpc-monitors/overview.mdx and configuration.mdx, constructs/grpc-monitor.mdx):
- The host (`url`, no scheme or port) is resolved (ipFamily), a connection opened to `port`, with TLS
  unless `grpcConfig.tls` is false; `grpcConfig.metadata` is sent with the call.
- HEALTH calls grpc.health.v1.Health/Check for `grpcConfig.service` ("" : the server as a whole);
  GRPC_HEALTHCHECK_STATUS is the serving status as a number (UNKNOWN 0, SERVING 1, NOT_SERVING 2,
  SERVICE_UNKNOWN 3).
- BEHAVIOR finds `grpcConfig.method` (`package.Service/Method`) through server reflection (or the
  check's own .proto: `serviceDefinition: PROTO_FILE`, `protoContent`, grpc_proto.py), sends
  `grpcConfig.message` (JSON, the request message's proto3 JSON form) and reads the answer:
  GRPC_RESPONSE is the response message as JSON (JSONPath by `property`), TEXT_BODY its text.
- GRPC_STATUS_CODE is the call's status (0 OK, 5 NOT_FOUND, 14 UNAVAILABLE ...), GRPC_METADATA the
  response's metadata (headers and trailers) by key, RESPONSE_TIME the whole run in ms (DNS and
  connection included). degraded/maxResponseTime (10000/20000 ms) apply to it; the attempt is also
  cut at the request's `timeout` when that is shorter.
Ours, where production is silent:
- A status other than OK fails the run (`grpc_status`) unless an assertion looks at
  GRPC_STATUS_CODE; in HEALTH mode a serving status other than SERVING fails it (`grpc_health`)
  unless an assertion looks at GRPC_HEALTHCHECK_STATUS; both after the assertions, like a 4xx.
- No connection (refused, reset), a failed TLS handshake or UNAVAILABLE are NETWORK_ERROR; the
  call's deadline is TIMEOUT. No reflection on the server, or a service or method it does not know,
  is `grpc_reflection` (the run fails naming the services it lists). A request message that is not
  JSON of the method's input type is INVALID_DEFINITION.
- TLS trusts the machine's CAs (trust.py: SSL_CERT_FILE, the system's store, certifi,
  NODE_EXTRA_CA_CERTS) and checks the certificate against `url`; skipSSL does not run here (the
  definition says why: check_definitions.py).
- `{{VARIABLES}}` in url, port, the metadata's values, service and message.
- The answer is read up to `Limits.body_cap_bytes` (gRPC's own receive limit): a longer one is
  RESOURCE_EXHAUSTED.
- The call runs on a thread (gRPC's reflection client has no deadline): the attempt waits for it in
  SLICE steps and closes the channel, which cancels every call on it, when the run is stopped or its
  deadline passes.

grpcio, grpcio-health-checking, grpcio-reflection and protobuf are imported here only: this module is
imported only when a GRPC check runs (protocols/__init__.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

# gRPC's core logs handshake failures to stderr at import-time verbosity: the run's own failure says it.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

import runner.checks.protocols.sockets as sockets
from runner.checks.assertions import ByProperty
from runner.checks.failures import Failure, FailureKind
from runner.checks.outcome import RequestSummary, TimingPhases
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.socket_fields import filled_port
from runner.checks.protocols.trust import trusted_pem
from runner.checks.variables import Substitution
from runner.models.check_definitions import GRPC_HEALTH_STATUSES, GrpcCheckDefinition

HEALTH_METHOD = "/grpc.health.v1.Health/Check"
HEALTH_LABELS = {number: label for label, number in GRPC_HEALTH_STATUSES.items()}
_TLS_WORDS = ("ssl", "tls", "handshake", "certificate")


class GrpcProtocol(CheckProtocol[GrpcCheckDefinition]):
    def fill(self, check: GrpcCheckDefinition, subst: Substitution) -> GrpcCheckDefinition:
        r, config = check.request, check.request.grpcConfig
        changes: dict[str, Any] = {}
        if "{{" in r.url:
            changes["url"] = subst.render(r.url, "request.url", encode=False).strip()
        if isinstance(r.port, str) and "{{" in r.port:
            changes["port"] = filled_port(r.port, subst, "request.port")
        config_changes: dict[str, Any] = {}
        for name in ("service", "message"):
            value = getattr(config, name)
            if value and "{{" in value:
                config_changes[name] = subst.render(value, f"request.grpcConfig.{name}", encode=False)
        if any("{{" in item.value for item in config.metadata):
            config_changes["metadata"] = [
                item.model_copy(update={"value": subst.render(
                    item.value, f"request.grpcConfig.metadata[{i}].value", encode=False)})
                for i, item in enumerate(config.metadata)
            ]  # fmt: skip
        if config_changes:
            changes["grpcConfig"] = config.model_copy(update=config_changes)
        if not changes:
            return check
        return check.model_copy(update={"request": r.model_copy(update=changes)})

    def perform(self, check: GrpcCheckDefinition, job: Job) -> Observation:
        run = _Run(check, job)
        failure, answer = run.run()
        health = answer.health if answer else None
        values: dict[str, Any] = {
            "RESPONSE_TIME": round(run.clock.ms(end=run.end)),
            "GRPC_STATUS_CODE": answer.code if answer else None,
            "GRPC_HEALTHCHECK_STATUS": health,
            "GRPC_RESPONSE": answer.response if answer else None,
            "TEXT_BODY": answer.text if answer else "",
            "GRPC_METADATA": ByProperty(answer.metadata if answer else {}),
        }
        span = run.clock.span
        timing = TimingPhases(
            dns_ms=span(None, "resolved"), connect_ms=span("resolved", "connected"), tls_ms=None,
            first_byte_ms=span("connected", "answered"), download_ms=None, total_ms=run.clock.ms(end=run.end),
        )  # fmt: skip
        text = transcript(check, answer) if answer else None
        return Observation(
            request=RequestSummary(
                kind="GRPC", method=run.method, target=run.target, remote_address=run.where
            ),
            timing=timing,
            failure=failure,
            cancelled=run.cancelled,
            excerpt=job.cut(text, job.limits.excerpt_chars) if text else None,
            values=values,
            implicit=implied(check, answer, run.where) if answer and failure is None else None,
        )


PROTOCOL = GrpcProtocol()


@dataclass(frozen=True)
class Answer:
    """What the server answered: the status, the message (JSON and text), the metadata."""

    code: int
    code_name: str
    details: str
    response: Any = None  # the response message as JSON (a dict); None without one
    text: str = ""
    health: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Outcome:
    """What the call's thread hands back: an answer, or a failure before any."""

    answer: Answer | None = None
    failure: Failure | None = None
    at: float | None = None  # time.monotonic() when the call ended


class _Run:
    def __init__(self, check: GrpcCheckDefinition, job: Job) -> None:
        self.check, self.job = check, job
        r = check.request
        self.clock = sockets.Stopwatch()
        self.end: float | None = None
        self.cancelled = False
        host = r.url.strip("[]")
        self.host = host
        self.target = f"[{host}]:{r.port_number}" if ":" in host else f"{host}:{r.port_number}"
        self.where = self.target
        config = r.grpcConfig
        self.method = (
            HEALTH_METHOD if config.mode == "HEALTH" else "/" + (config.method or "").strip().strip("/")
        )

    def run(self) -> tuple[Failure | None, Answer | None]:
        r, deadline, stop = self.check.request, self.job.bounds.deadline, self.job.stop
        port = r.port_number
        assert port is not None  # problems() refused a definition without one
        try:
            try:
                address = sockets.resolve(self.host, port, sockets.family_of(r.ipFamily), socket.SOCK_STREAM,
                                          deadline, stop)  # fmt: skip
            except OSError:
                return Failure(FailureKind.DNS_LOOKUP, f"DNS lookup failed: {self.host} ({r.ipFamily})"), None
            self.clock.mark("resolved")
            self.where = address.shown
            try:  # a plain connection first: a refused or unreachable port is named as such
                sockets.connect(address, socket.SOCK_STREAM, deadline, stop).close()
            except OSError as exc:
                connect = (FailureKind.CONNECTION_FAILED, "connection failed")
                return sockets.os_failure(exc, self.where, otherwise=connect, reset=False), None
            self.clock.mark("connected")
            return self._call(address)
        except sockets.Stopped:
            self.cancelled = True
            return None, None
        except sockets.DeadlineReached:
            return self._timeout(), None

    def _timeout(self) -> Failure:
        what = "no answer" if "connected" in self.clock.marks else "no connection"
        return Failure(FailureKind.TIMEOUT, f"timeout: {what} within {self.job.bounds.text}: {self.where}")

    def _call(self, address: sockets.Target) -> tuple[Failure | None, Answer | None]:
        config, limits = self.check.request.grpcConfig, self.job.limits
        own: Any = None  # the method's message classes from the check's own .proto
        if config.mode == "BEHAVIOR" and config.serviceDefinition == "PROTO_FILE":
            from runner.checks.protocols.grpc_proto import proto_pool  # protoc only for such a check

            pool = proto_pool(config.protoContent or "", self.job.bounds.deadline, self.job.stop)
            if isinstance(pool, Failure):
                return pool, None
            own = self._method_classes(pool, FailureKind.INVALID_DEFINITION, "the protoContent")
            if isinstance(own, Failure):
                return own, None
        options: list[tuple[str, Any]] = [
            ("grpc.default_authority", self.target),
            ("grpc.enable_retries", 0),
            ("grpc.max_receive_message_length", limits.body_cap_bytes),
        ]
        if config.tls:
            options.append(("grpc.ssl_target_name_override", self.host))
            credentials = grpc.ssl_channel_credentials(root_certificates=trusted_pem(limits).encode())
            channel = grpc.secure_channel(address.shown, credentials, options=options)
        else:
            channel = grpc.insecure_channel(address.shown, options=options)
        handed: Future[_Outcome] = Future()  # the thread's outcome, handed back once
        metadata = tuple((item.key.lower(), item.value) for item in config.metadata)
        timeout = max(0.001, self.job.bounds.left())

        def work() -> None:
            try:
                outcome = self._exchange(channel, metadata, timeout, own)
                handed.set_result(dataclasses.replace(outcome, at=time.monotonic()))
            except Exception as exc:  # a library's surprise at what the server sent: fails closed, named
                failed = f"gRPC call failed ({type(exc).__name__}: {str(exc)[:200]}): {self.where}"
                handed.set_result(_Outcome(failure=Failure(FailureKind.NETWORK, failed)))

        thread = threading.Thread(target=work, name="check-grpc", daemon=True)
        thread.start()
        try:
            while thread.is_alive():
                thread.join(sockets.SLICE)
                if self.job.stopped:
                    self.cancelled = True
                    return None, None
                if time.monotonic() >= self.job.bounds.deadline and thread.is_alive():
                    return self._timeout(), None
        finally:
            channel.close()  # cancels the calls still under way; the thread then ends
        outcome = handed.result() if handed.done() else _Outcome(failure=self._timeout())
        if outcome.at is not None:
            self.clock.marks["answered"] = self.end = outcome.at
        return outcome.failure, outcome.answer

    def _exchange(
        self, channel: grpc.Channel, metadata: tuple[tuple[str, str], ...], timeout: float, own: Any
    ) -> _Outcome:
        config = self.check.request.grpcConfig
        if config.mode == "HEALTH":
            request: Any = health_pb2.HealthCheckRequest(service=config.service or "")
            response_type: Any = health_pb2.HealthCheckResponse
        else:
            found = own or self._find_method(channel)
            if isinstance(found, Failure):
                return _Outcome(failure=found)
            request_type, response_type = found
            try:
                request = json_format.Parse(config.message or "{}", request_type())
            except json_format.ParseError as exc:
                message = (
                    f"request.grpcConfig.message: not a {request_type.DESCRIPTOR.full_name} in JSON ({exc})"
                )
                return _Outcome(failure=Failure(FailureKind.INVALID_DEFINITION, message, network=False))
        call = channel.unary_unary(self.method, request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=response_type.FromString)  # fmt: skip
        try:
            response, state = call.with_call(request, timeout=timeout, metadata=metadata or None)
        except grpc.RpcError as error:
            return self._failed(error)
        except ValueError as exc:  # gRPC refuses a metadata key or value before sending anything
            message = f"request.grpcConfig.metadata: not sendable as gRPC metadata ({exc})"
            return _Outcome(failure=Failure(FailureKind.INVALID_DEFINITION, message, network=False))
        return _Outcome(answer=self._answer(state, response))

    def _find_method(self, channel: grpc.Channel) -> tuple[Any, Any] | Failure:
        """The input and output message classes of the method, through server reflection."""
        service_name = self.method.strip("/").rpartition("/")[0]
        database = ProtoReflectionDescriptorDatabase(channel)
        pool = descriptor_pool.DescriptorPool(database)
        try:
            pool.FindServiceByName(service_name)  # asks the server: its answer stays in the pool
        except grpc.RpcError as error:
            code = error.code()
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                return self._failed(error).failure or self._timeout()
            return Failure(FailureKind.GRPC_REFLECTION,
                           f"failed to list services via reflection ({code.name}: {_details(error)}): "
                           f"{self.where}", network=False)  # fmt: skip
        except KeyError:
            try:
                listed = ", ".join(sorted(database.get_services())) or "none"
            except grpc.RpcError:
                listed = "unknown"
            return Failure(FailureKind.GRPC_REFLECTION,
                           f"reflection does not know the service {service_name} (it lists {listed}): "
                           f"{self.where}", network=False)  # fmt: skip
        return self._method_classes(pool, FailureKind.GRPC_REFLECTION, "reflection")

    def _method_classes(self, pool: Any, kind: FailureKind, source: str) -> tuple[Any, Any] | Failure:
        """The method's input and output message classes from `pool` (reflection's, or the check's
        own .proto's); `kind` for a service or method it does not have."""
        service_name, _, method_name = self.method.strip("/").rpartition("/")
        try:
            service = pool.FindServiceByName(service_name)
        except KeyError:
            return Failure(kind, f"{source} has no service {service_name}: {self.where}", network=False)
        method = service.methods_by_name.get(method_name)
        if method is None:
            listed = ", ".join(sorted(service.methods_by_name)) or "none"
            return Failure(kind,
                           f"the service {service_name} has no method {method_name} (it has {listed}): "
                           f"{self.where}", network=False)  # fmt: skip
        if method.client_streaming or method.server_streaming:
            return Failure(FailureKind.INVALID_DEFINITION,
                           f"request.grpcConfig.method: {service_name}/{method_name} is a streaming method; "
                           "GRPC checks call unary methods", network=False)  # fmt: skip
        return (message_factory.GetMessageClass(method.input_type),
                message_factory.GetMessageClass(method.output_type))  # fmt: skip

    def _answer(self, state: Any, response: Any) -> Answer:
        document = json_format.MessageToDict(response)
        health = int(response.status) if self.check.request.grpcConfig.mode == "HEALTH" else None
        return Answer(
            code=0, code_name="OK", details="", response=document,
            text=json.dumps(document, separators=(",", ":"), ensure_ascii=False), health=health,
            metadata=_metadata(state),
        )  # fmt: skip

    def _failed(self, error: Any) -> _Outcome:
        """A call that ended with a status other than OK: no connection, the deadline, or an answer."""
        code: grpc.StatusCode = error.code()
        details = _details(error)
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return _Outcome(failure=Failure(FailureKind.TIMEOUT,
                            f"timeout: no answer within {self.job.bounds.text}: {self.where}"))  # fmt: skip
        if code is grpc.StatusCode.UNAVAILABLE:
            tls = any(word in details.lower() for word in _TLS_WORDS)
            if "OPENSSL_internal:" in details:  # gRPC's wrapping around BoringSSL's own reason
                details = details.rsplit("OPENSSL_internal:", 1)[1].removesuffix(": OK").strip()
            kind = FailureKind.TLS if tls else FailureKind.NETWORK
            words = "TLS handshake failed" if tls else "gRPC UNAVAILABLE"
            return _Outcome(failure=Failure(kind, f"{words} ({details}): {self.where}"))
        if code is grpc.StatusCode.CANCELLED and self.job.stopped:
            return _Outcome()
        return _Outcome(answer=Answer(code=code.value[0], code_name=code.name, details=details,
                                      metadata=_metadata(error)))  # fmt: skip


def _details(error: Any) -> str:
    try:
        return str(error.details() or "")
    except Exception:  # an error raised before the call had a state
        return str(error)


def _metadata(state: Any) -> dict[str, str]:
    """The response's headers and trailers by key (several values joined by ", ")."""
    out: dict[str, str] = {}
    for getter in ("initial_metadata", "trailing_metadata"):
        try:
            items = getattr(state, getter)() or ()
        except Exception:
            items = ()
        for key, value in items:
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            out[key] = f"{out[key]}, {text}" if key in out else text
    return out


def implied(check: GrpcCheckDefinition, answer: Answer, where: str) -> Failure | None:
    """The failure an answer implies when no assertion looks at it (see the module's docstring)."""
    sources = {a.source for a in check.request.assertions}
    if answer.code != 0 and "GRPC_STATUS_CODE" not in sources:
        message = f"gRPC status {answer.code} {answer.code_name}: {answer.details or 'no details'}: {where}"
        return Failure(FailureKind.GRPC_STATUS, message, network=False)
    serving = GRPC_HEALTH_STATUSES["SERVING"]
    mode = check.request.grpcConfig.mode
    if mode == "HEALTH" and answer.health != serving and "GRPC_HEALTHCHECK_STATUS" not in sources:
        label = HEALTH_LABELS.get(answer.health or 0, str(answer.health))
        service = check.request.grpcConfig.service or "the server"
        message = f"health status {answer.health} {label} for {service}, expected 1 SERVING: {where}"
        return Failure(FailureKind.GRPC_HEALTH, message, network=False)
    return None


def transcript(check: GrpcCheckDefinition, answer: Answer) -> str:
    """`HEALTH grpc.health.v1.Health/Check (service my.Service): OK, SERVING (1)`, then the message."""
    config = check.request.grpcConfig
    if config.mode == "HEALTH":
        what = f"HEALTH {HEALTH_METHOD.strip('/')} (service {config.service or '(the server)'})"
    else:
        what = f"BEHAVIOR {(config.method or '').strip('/')}"
    status = f"status {answer.code} {answer.code_name}" + (f" ({answer.details})" if answer.details else "")
    if answer.health is not None:
        status += f", {HEALTH_LABELS.get(answer.health, str(answer.health))} ({answer.health})"
    lines = [f"{what}: {status}"]
    if answer.text:
        lines.append(answer.text)
    if answer.metadata:
        lines.append("metadata: " + ", ".join(f"{k}: {v}" for k, v in answer.metadata.items()))
    return "\n".join(lines)
