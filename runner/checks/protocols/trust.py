"""The certificate authorities the GRPC and SSL checks trust, as a user's machine and Node trust them.

In order, all of them together:
- `Limits.ca_file` (the caller's own CA; what the HTTP protocol passes to libcurl);
- the machine's store: the file `SSL_CERT_FILE` names (OpenSSL's variable) or else the system's
  default file, and certifi's bundle (what requests and the HTTP checks trust);
- `NODE_EXTRA_CA_CERTS` (Node's variable, which a Checkly project's CI job often sets for a private CA),
  added on top as Node adds it;
- for the SSL checks' context also `SSL_CERT_DIR` (a folder of hashed certificates; gRPC takes one
  PEM text only).
Each file is read up to MAX_BYTES (a bundle is a few hundred KiB); a file missing or unreadable is
left out, so a variable pointing nowhere trusts nothing more (the handshake then says why).
The PEM text and the verifying context are kept while the sources (the variables, the files' sizes
and times) stay the same: parsing ~150 roots takes 0.1 to 1 s of CPU, and an attempt that waits on it
could not be stopped within its 50 ms.
"""

from __future__ import annotations

import functools
import os
import ssl

import certifi

from runner.checks.limits import Limits

MAX_BYTES = 16 * 1024 * 1024
_BEGIN, _END = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"


def _read(path: str | None) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_BYTES).decode("ascii", "ignore")
    except OSError:
        return ""


Sources = tuple[tuple[str, int, int], ...]  # (path, size, mtime_ns) of each file; ("", 0, 0) if none


def _sources(limits: Limits) -> tuple[Sources, str]:
    system = os.environ.get("SSL_CERT_FILE") or ssl.get_default_verify_paths().cafile
    paths = (limits.ca_file, system, certifi.where(), os.environ.get("NODE_EXTRA_CA_CERTS"))
    out = []
    for path in paths:
        try:
            stat = os.stat(path) if path else None
        except OSError:
            stat = None
        out.append((path or "", stat.st_size, stat.st_mtime_ns) if stat else ("", 0, 0))
    return tuple(out), os.environ.get("SSL_CERT_DIR") or ""


def trusted_pem(limits: Limits) -> str:
    """The PEM text of every CA certificate trusted (see the module's docstring)."""
    return _pem(_sources(limits)[0])


@functools.lru_cache(maxsize=4)
def _pem(sources: Sources) -> str:
    blocks: dict[str, None] = {}  # each certificate once (certifi repeats most of the system's)
    for path, _, _ in sources:
        for block in _read(path).split(_END)[:-1]:
            start = block.find(_BEGIN)
            if start >= 0:
                blocks[block[start:].strip() + "\n" + _END] = None
    return "\n".join(blocks)


def verifying_context(limits: Limits) -> ssl.SSLContext:
    """A client context that verifies the chain against the trusted CAs, not the host name (the SSL
    check judges the name itself, so that a mismatch is evidence, not a failed handshake)."""
    return _context(*_sources(limits))


@functools.lru_cache(maxsize=4)
def _context(sources: Sources, folder: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    pem = _pem(sources)
    if pem:
        context.load_verify_locations(cadata=pem)
    if folder and os.path.isdir(folder):
        context.load_verify_locations(capath=folder)
    return context


def inspecting_context() -> ssl.SSLContext:
    """A client context that takes any certificate (to read one that does not verify)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
