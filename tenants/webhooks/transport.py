"""Sending one webhook request, with care for where it goes (an adapter: no ORM).

A hook's URL is a tenant's input, and the portal runs inside the fleet's network: a request must
not reach the portal's own neighbours (server-side request forgery). So the host is resolved
here, every address it resolves to must be public (not private, loopback, link-local, reserved
or multicast), and the connection goes to the address checked (no second lookup a DNS answer
could change in between), with TLS still verified against the host name. Redirects are not
followed, only the start of the answer is read, and the whole send (connecting, sending, reading
the answer) has one deadline: a receiver cannot hold a worker by answering a byte at a time.

`allow_localhost` (WEBHOOK_ALLOW_INSECURE_LOCALHOST, tests and the demo) lets a hook reach
127.0.0.1/localhost, over plain HTTP too; nothing else private.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import certifi
import urllib3
import urllib3.connection

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_ANSWER = 1000  # characters of the receiver's answer kept in the log


class UnsafeUrl(ValueError):
    """A URL the portal will not send to (its message says why, for people)."""


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no HTTP answer (refused, timed out, unsafe)
    body: str
    error: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def url_check(url: str, *, allow_localhost: bool) -> None:
    """Refuse a URL that is not HTTPS (HTTP only to localhost, when allowed), carries a
    password, or names a non-public address literally. Names are resolved when sending."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError as exc:  # a malformed [bracketed] host: "[x]", "[::1" ...
        raise UnsafeUrl("The host is not a valid name or address: put an IPv6 address in "
                        "brackets, e.g. https://[2001:db8::1]/portal.") from exc
    if not host:
        raise UnsafeUrl("Enter a full URL, e.g. https://hooks.example.com/portal.")
    if parts.username or parts.password:
        raise UnsafeUrl("Put no user name or password in the URL: the signature authenticates.")
    local = allow_localhost and host in LOCAL_NAMES
    if parts.scheme != "https" and not (parts.scheme == "http" and local):
        raise UnsafeUrl("The URL must start with https://.")
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError as exc:
        raise UnsafeUrl("The port is not a number from 1 to 65535.") from exc
    if host == "localhost" and not local:
        raise UnsafeUrl("The URL must reach a public address, not this machine.")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return
    _address_check(address, allow_localhost=allow_localhost)


# IPv6 ranges that carry an IPv4 address the traffic ends up at, which Python counts as global
# whatever that address is: NAT64's well-known prefix (RFC 6052; the IPv4 address in the last
# 32 bits) and 6to4 (RFC 3056). NAT64's local-use prefix (RFC 8215) is the operator's own
# translator, never public; IPv4-compatible addresses (::a.b.c.d) are deprecated.
NAT64 = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded_ipv4(address) -> ipaddress.IPv4Address | None:
    if address.version != 6:
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _address_check(address, *, allow_localhost: bool) -> None:
    if allow_localhost and address.is_loopback:
        return
    refused = UnsafeUrl(f"The URL reaches {address}, which is not a public address.")
    if not address.is_global or address.is_multicast:
        raise refused
    if address.version == 6 and (address in NAT64_LOCAL or address in IPV4_COMPATIBLE):
        raise refused
    inner = _embedded_ipv4(address)
    if inner is not None and (not inner.is_global or inner.is_multicast):
        raise UnsafeUrl(f"The URL reaches {address}, which leads to {inner}, "
                        "not a public address.")


def resolve(host: str, port: int, *, allow_localhost: bool) -> str:
    """One address of `host` to connect to, every one it resolves to being public."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnsafeUrl(f"{host} does not resolve: {exc}") from exc
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in found]
    for address in addresses:
        _address_check(address, allow_localhost=allow_localhost)
    return str(addresses[0])


def _storable(text: str) -> str:
    """The receiver's words as PostgreSQL text can hold them: no NUL character (saving one
    fails, and the delivery would be sent again for ever), at most MAX_ANSWER characters."""
    return text.replace("\x00", "\ufffd")[:MAX_ANSWER]


class _Deadline:
    """Shuts the connection's socket down once the send has used its whole time: a socket's
    timeout counts per read, so a receiver answering a byte at a time would otherwise hold the
    worker (and the delivery's row lock) for as long as it likes."""

    def __init__(self, connection, seconds: float) -> None:
        self.expired = False
        self._connection, self._over, self._lock = connection, False, threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:  # after this the timer touches nothing: the socket may be closed
            self._over = True
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if self._over:
                return
            self.expired = True
            sock = self._connection.sock
            if isinstance(sock, socket.socket):
                # Wakes the blocked read (TLS or not) with an end of stream or an error.
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


def post(url: str, *, body: bytes, headers: dict[str, str], timeout: float,
         allow_localhost: bool) -> Answer:
    """POST `body` to `url` within `timeout` seconds in all (resolving, connecting, sending and
    reading the answer); never raises for what the receiver or the network does."""
    started = time.monotonic()

    def answer(status: int | None, text: str = "", error: str = "") -> Answer:
        return Answer(status, _storable(text), _storable(error),
                      int((time.monotonic() - started) * 1000))

    try:
        url_check(url, allow_localhost=allow_localhost)
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = resolve(host, port, allow_localhost=allow_localhost)
    except UnsafeUrl as exc:
        return answer(None, error=f"Not sent: {exc}")
    timed_out = (f"Timed out: no complete answer within {timeout:g} s (connecting, sending "
                 "and reading together).")
    remaining = timeout - (time.monotonic() - started)
    if remaining <= 0:
        return answer(None, error=timed_out)
    if parts.scheme == "https":
        connection = urllib3.connection.HTTPSConnection(
            address, port, timeout=min(remaining, 5.0), server_hostname=host,
            assert_hostname=host, cert_reqs="CERT_REQUIRED", ca_certs=certifi.where(),
        )
    else:
        connection = urllib3.connection.HTTPConnection(address, port,
                                                       timeout=min(remaining, 5.0))
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    named = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    host_header = named if parts.port is None else f"{named}:{parts.port}"
    try:
        with _Deadline(connection, remaining) as deadline:
            try:
                connection.connect()
                connection.sock.settimeout(max(0.001, timeout - (time.monotonic() - started)))
                connection.request(
                    "POST", path, body=body, preload_content=False,
                    headers={**headers, "host": host_header,
                             "user-agent": "ai-factory-portal-webhooks"},
                )
                response = connection.getresponse()
                text = response.read(MAX_ANSWER * 4, decode_content=True).decode("utf-8",
                                                                                 "replace")
            except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
                if deadline.expired:
                    return answer(None, error=timed_out)
                return answer(None, error=f"{type(exc).__name__}: {exc}")
        if deadline.expired:  # what was read before the socket was shut is not an answer
            return answer(None, error=timed_out)
    finally:
        connection.close()
    return answer(response.status, text, "" if 200 <= response.status < 300
                  else f"The receiver answered HTTP {response.status}.")
