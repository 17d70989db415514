"""A real gRPC server in the test process for the GRPC checks: the standard health service and a
small reflection-enabled service, plaintext or TLS, on a free loopback port.

The service (package `shop`, no .proto compiler needed: its descriptor is built here):
    service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
    message HelloRequest { string name = 1; int32 delay_ms = 2; }
    message HelloReply { string message = 1; int32 length = 2; }
PROTO is the same service as a .proto file's text (a check's `protoContent`).
SayHello answers `hello <name>` with the trailing metadata `x-served-by: test-greeter` (and the
request's `x-echo`), after `delay_ms`; the name `fail` answers NOT_FOUND. Health: the server and
`shop.Greeter` SERVING, `shop.Down` NOT_SERVING (each can be changed through `health`).
"""

from __future__ import annotations

import time
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

SERVICE = "shop.Greeter"
PROTO = """syntax = "proto3";
package shop;
service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
message HelloRequest { string name = 1; int32 delay_ms = 2; }
message HelloReply { string message = 1; int32 length = 2; }
"""


def _pool() -> descriptor_pool.DescriptorPool:
    proto = descriptor_pb2.FileDescriptorProto(name="shop.proto", package="shop", syntax="proto3")
    request = proto.message_type.add(name="HelloRequest")
    request.field.add(name="name", number=1, type=9, label=1, json_name="name")
    request.field.add(name="delay_ms", number=2, type=5, label=1, json_name="delayMs")
    reply = proto.message_type.add(name="HelloReply")
    reply.field.add(name="message", number=1, type=9, label=1, json_name="message")
    reply.field.add(name="length", number=2, type=5, label=1, json_name="length")
    service = proto.service.add(name="Greeter")
    service.method.add(name="SayHello", input_type=".shop.HelloRequest", output_type=".shop.HelloReply")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


POOL = _pool()
HelloRequest: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName("shop.HelloRequest"))
HelloReply: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName("shop.HelloReply"))


def _say_hello(request: Any, context: grpc.ServicerContext) -> Any:
    if request.name == "fail":
        context.abort(grpc.StatusCode.NOT_FOUND, "no such person")
    deadline = time.monotonic() + request.delay_ms / 1000
    while time.monotonic() < deadline and context.is_active():
        time.sleep(0.01)
    echo = [(k, v) for k, v in context.invocation_metadata() if k == "x-echo"]
    context.set_trailing_metadata((("x-served-by", "test-greeter"), *echo))
    text = f"hello {request.name}"
    return HelloReply(message=text, length=len(text))


@dataclass
class GrpcServer:
    server: grpc.Server
    port: int
    health: health.HealthServicer

    def stop(self) -> None:
        self.server.stop(grace=None).wait(2)


def start_grpc(tls: tuple[bytes, bytes] | None = None, reflection_on: bool = True) -> GrpcServer:
    """A server on 127.0.0.1; `tls`: (private key PEM, certificate chain PEM); `reflection_on`: False
    for a server without reflection (as many in production)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "SayHello": grpc.unary_unary_rpc_method_handler(
                _say_hello, request_deserializer=HelloRequest.FromString,
                response_serializer=lambda m: m.SerializeToString(),
            )
        },
    )  # fmt: skip
    server.add_generic_rpc_handlers((handler,))
    servicer = health.HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    servicer.set("shop.Down", health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    names = (SERVICE, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME)
    if reflection_on:
        reflection.enable_server_reflection(names, server, pool=POOL)
    if tls is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([tls]))
    server.start()
    return GrpcServer(server, port, servicer)
