"""A GRPC check's own .proto (`serviceDefinition: PROTO_FILE`, `protoContent`): compiled to descriptors.

Production "compiles it locally — no server reflection required" (grpc-monitors/configuration.mdx).
Here protoc from grpcio-tools (the official protoc for Python; imported only for its folder of
Google's .proto files, protoc itself runs as a child process) writes the file's FileDescriptorSet
with its imports (Google's well-known types resolve); the method's message classes come from it. The
child runs through `child.run_child`: bounded by the attempt's deadline, ended when the run is
stopped, its output capped. A file that does not compile is an invalid definition naming protoc's
first error.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool

import runner.checks.protocols.sockets as sockets
from runner.checks.child import run_child
from runner.checks.failures import Failure, FailureKind

MAX_DESCRIPTOR_BYTES = 16 * 1024 * 1024
OUTPUT_CAP = 64 * 1024


def _include() -> str | None:
    """grpcio-tools' folder of Google's .proto files (google/protobuf/timestamp.proto ...); None when
    grpcio-tools is not installed."""
    try:
        import grpc_tools
    except ImportError:
        return None
    folder = Path(grpc_tools.__file__).parent / "_proto"
    return str(folder) if folder.is_dir() else None


def proto_pool(content: str, deadline: float, stop: threading.Event | None) -> Any:
    """A DescriptorPool of `content` and its imports; a Failure (INVALID_DEFINITION) when it does not
    compile. Raises sockets.Stopped or sockets.DeadlineReached as the socket steps do."""
    include = _include()
    if include is None:
        message = "request.grpcConfig.protoContent: cannot be compiled here (grpcio-tools is not installed)"
        return Failure(FailureKind.NOT_RUNNABLE_LOCALLY, message, network=False)
    with tempfile.TemporaryDirectory(prefix="testsession-proto-") as folder:
        source, output = Path(folder) / "check.proto", Path(folder) / "check.pb"
        source.write_text(content, encoding="utf-8")
        argv = [sys.executable, "-m", "grpc_tools.protoc", f"-I{folder}", f"-I{include}",
                f"--descriptor_set_out={output}", "--include_imports", str(source)]  # fmt: skip
        result = run_child(argv, deadline=deadline, stop=stop, output_cap=OUTPUT_CAP)
        if result.cancelled:
            raise sockets.Stopped
        if result.timed_out:
            raise sockets.DeadlineReached
        if result.returncode != 0 or not output.is_file():
            lines = [line.replace(str(source), "protoContent") for line in result.stderr.splitlines() if line]
            first = lines[0] if lines else f"protoc exited with {result.returncode}"
            message = f"request.grpcConfig.protoContent: does not compile: {first}"
            return Failure(FailureKind.INVALID_DEFINITION, message, network=False)
        with output.open("rb") as handle:
            data = handle.read(MAX_DESCRIPTOR_BYTES)
    files = descriptor_pb2.FileDescriptorSet.FromString(data)
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return pool
