"""Webhooks in tests: a real receiver (an HTTP server on 127.0.0.1 in a thread) that checks
each delivery's signature the way the Standard Webhooks specification says, independently of
the portal's code; and a hook registered for a tenant's events."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from core.sealed import seal
from tenants.webhooks.models import SUBSCRIBABLE, Webhook, WebhookDelivery

SECRET = "whsec_" + base64.b64encode(b"a test secret of 24 bytes").decode()
TOLERANCE = 5 * 60  # the specification's suggested tolerance of the timestamp


def verify(*, secret: str, headers, body: bytes) -> dict:
    """The payload if the delivery is signed by `secret` and fresh; ValueError otherwise
    (written from the specification, sharing nothing with tenants.webhooks.signing)."""
    msg_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(time.time() - int(timestamp)) > TOLERANCE:
        raise ValueError("timestamp too old or too new")
    key = base64.b64decode(secret.split("_", 1)[1])
    expected = base64.b64encode(hmac.new(
        key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()).decode()
    signatures = [s.split(",", 1) for s in headers["webhook-signature"].split(" ")]
    if not any(v == "v1" and hmac.compare_digest(sig, expected) for v, sig in signatures):
        raise ValueError("no valid signature")
    return json.loads(body)


@dataclass
class Received:
    headers: dict
    body: bytes
    payload: dict | None  # None: the signature did not verify
    error: str = ""


@dataclass
class Receiver:
    """What the receiver got, and what it answers next (`answers`: status codes, in turn;
    the last one repeats; `body`, when set, the body of each answer)."""

    url: str
    secret: str
    answers: list[int] = field(default_factory=lambda: [200])
    body: bytes | None = None  # what it answers (None: a short text that suits the status)
    received: list[Received] = field(default_factory=list)


def start_receiver(secret: str = SECRET, path: str = "/hook", host: str = "127.0.0.1"):
    """A server on `host` (127.0.0.1, or ::1) that verifies and records each POST; returns
    (receiver, stop)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                received = Received(headers, body, verify(secret=receiver.secret,
                                                          headers=headers, body=body))
            except (KeyError, ValueError) as exc:
                received = Received(headers, body, None, str(exc))
            receiver.received.append(received)
            status = receiver.answers[min(len(receiver.received), len(receiver.answers)) - 1]
            answer = receiver.body if receiver.body is not None else (
                b'{"ok": true}' if status < 300 else b"receiver is down for maintenance")
            self.send_response(status)
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = Server((host, 0), Handler)
    named = f"[{host}]" if ":" in host else host
    receiver = Receiver(url=f"http://{named}:{server.server_address[1]}{path}", secret=secret)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    return receiver, stop


def start_trickler(*, part: str, every: float = 0.2, lasting: float = 3.0):
    """A server on 127.0.0.1 that reads a request and answers one byte every `every` seconds
    for `lasting` seconds: of its status line and headers (`part="headers"`), or of its body
    after a prompt 200 (`part="body"`). Returns (url, stop)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stopped = threading.Event()

    def serve():
        while not stopped.is_set():
            try:
                peer, _ = listener.accept()
            except OSError:
                return
            with peer:
                peer.recv(65536)
                length = int(lasting / every)
                head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % length
                slow = head + b"x" * length if part == "headers" else b"x" * length
                try:
                    if part == "body":
                        peer.sendall(head)
                    for byte in slow:
                        if stopped.wait(every):
                            break
                        peer.sendall(bytes([byte]))
                except OSError:
                    pass  # the portal hung up: what the test wants

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def stop():
        stopped.set()
        listener.close()
        thread.join(5)

    return f"http://127.0.0.1:{listener.getsockname()[1]}/hook", stop


def hook_for(tenant, *, url: str, events=None, format: str = Webhook.Format.STANDARD,
             secret: str = SECRET, name: str = "ci") -> Webhook:
    """A hook of `tenant` (None: for every tenant) hearing about `events` (default: all)."""
    return Webhook.objects.create(
        tenant=tenant, name=name, url=url, format=format, sealed_secret=seal(secret),
        event_types=list(events or [value for value, _ in SUBSCRIBABLE]),
    )


def owed(event_type: str) -> list[dict]:
    """The payloads of the deliveries of `event_type` owed so far (sent or not)."""
    return list(WebhookDelivery.objects.filter(event_type=event_type).order_by("pk")
                .values_list("payload", flat=True))
