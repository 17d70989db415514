"""A TLS server on loopback that completes handshakes with a given certificate (the SSL checks'
target in tests)."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path


class TlsServer:
    """Accepts connections on 127.0.0.1 and completes a TLS handshake with its certificate (read
    once, at the start: the files in `tmp` may be written again for the next server)."""

    def __init__(
        self, cert_pem: bytes, key_pem: bytes, tmp: Path, highest: ssl.TLSVersion | None = None
    ) -> None:
        (tmp / "cert.pem").write_bytes(cert_pem)
        (tmp / "key.pem").write_bytes(key_pem)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(str(tmp / "cert.pem"), str(tmp / "key.pem"))
        if highest is not None:
            self.context.maximum_version = highest
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.05)
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(2)
            try:
                with self.context.wrap_socket(conn, server_side=True):
                    pass
            except OSError:
                conn.close()

    def stop(self) -> None:
        self.running = False
        self.thread.join(2)
        self.sock.close()
