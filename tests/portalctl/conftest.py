"""portalctl against a live portal: its own config folder and kubeconfig per test, run
in-process through its Typer app (fast) or as `python -m portalctl` (the real process)."""

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from portalctl.app import app


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def cli_home(tmp_path, monkeypatch) -> Path:
    """A config folder and a kubeconfig of the test's own; no token from the environment."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kube" / "config"))
    monkeypatch.delenv("PORTALCTL_TOKEN", raising=False)
    monkeypatch.delenv("PORTALCTL_SERVER", raising=False)
    return tmp_path


@pytest.fixture
def portalctl(cli_home):
    """`portalctl(*args, token=..., server=...)`: run a command, get its exit code and output."""

    def run(*args: str, token: str = "", server: str = "") -> Run:
        env = {"PORTALCTL_TOKEN": token or None, "PORTALCTL_SERVER": server or None}
        result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return run


@dataclass
class Seen:
    method: str
    path: str
    headers: dict


class Scripted:
    """A stand-in HTTP server (a real one, on 127.0.0.1) for a portal or an identity provider
    that misbehaves: `answer(method, path, *replies)` queues replies (status, body, headers);
    the last one repeats. Every request is kept in `seen`."""

    def __init__(self) -> None:
        self.replies: dict[tuple[str, str], list[tuple[int, Any, dict]]] = {}
        self.seen: list[Seen] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                scripted.seen.append(Seen(self.command, path, dict(self.headers)))
                queue = scripted.replies.get((self.command, path)) or [(404, {"error": {
                    "message": "Not found."}}, {})]
                status, body, headers = queue.pop(0) if len(queue) > 1 else queue[0]
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _reply

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, method: str, path: str, *replies: Any) -> None:
        """Queue replies: each a body (status 200) or (status, body[, headers])."""
        queued = []
        for reply in replies:
            if isinstance(reply, tuple):
                status, body, *rest = reply
                queued.append((status, body, dict(rest[0]) if rest else {}))
            else:
                queued.append((200, reply, {}))
        self.replies[(method, path)] = queued

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    """`scripted()`: a new stand-in server; all are stopped after the test."""
    servers: list[Scripted] = []

    def make() -> Scripted:
        servers.append(Scripted())
        return servers[-1]

    yield make
    for server in servers:
        server.stop()
