"""Where portalctl keeps its state: $XDG_CONFIG_HOME/portalctl (~/.config/portalctl).

`config.json` holds the server, the identity provider and the current tenant; `credentials.json`
the token of the last sign-in and the server it was given for (it is never sent to another).
Both are written mode 0600 (their folder 0700), atomically. PORTALCTL_SERVER and
PORTALCTL_TOKEN override what is stored, for scripts and CI.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .exits import CliError, Exit

DEFAULT_CLIENT_ID = "portal-cli"
# Where a bearer token may travel over plain HTTP: this machine only.
LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "portalctl"


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by its owner only, replacing it in one step. A symlink
    is followed: the file it points to is replaced (the temporary file is made beside it), the
    link stays."""
    path = path.resolve()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as exc:
        raise CliError(f"Cannot write {path}: {exc}", Exit.ERROR) from exc
    try:
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise CliError(f"Cannot write {path}: {exc}", Exit.ERROR) from exc
        raise


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise CliError(f"Cannot read {path}: {exc}", Exit.ERROR) from exc
    if not isinstance(data, dict):
        raise CliError(f"Cannot read {path}: it does not hold a JSON object.", Exit.ERROR)
    return data


def check_server(server: str) -> str:
    """`server` if it is a URL a bearer token may be sent to: https, or http to this machine."""
    try:
        parts = urlsplit(server)
        host = parts.hostname
    except ValueError as exc:
        raise CliError(f"{server!r} is not a URL: {exc}", Exit.USAGE) from exc
    if parts.scheme not in ("http", "https") or not host:
        raise CliError(f"{server!r} is not a portal URL: give https://HOST.", Exit.USAGE)
    if parts.scheme == "http" and host not in LOOPBACK:
        raise CliError(f"{server} is plain HTTP: tokens would travel in clear. Use https:// "
                       f"(plain http is only for localhost).", Exit.USAGE)
    return server


@dataclass
class Config:
    server: str = ""
    issuer: str = ""
    client_id: str = DEFAULT_CLIENT_ID
    tenant: str = ""

    @classmethod
    def load(cls, *, environment: bool = True) -> Config:
        """The stored configuration; PORTALCTL_SERVER wins over its server unless
        `environment` is False."""
        data = _read(config_dir() / "config.json")
        config = cls(**{k: str(v) for k, v in data.items() if k in cls.__dataclass_fields__})
        if environment:
            config.server = os.environ.get("PORTALCTL_SERVER") or config.server
        config.server = config.server.rstrip("/")
        return config

    def save(self) -> None:
        write_private(config_dir() / "config.json", json.dumps(asdict(self), indent=2) + "\n")

    def require_server(self) -> str:
        if not self.server:
            raise CliError("No portal configured: run portalctl login --server URL.", Exit.AUTH)
        return check_server(self.server)

    def require_tenant(self, override: str | None = None) -> str:
        tenant = override or self.tenant
        if not tenant:
            raise CliError("No tenant chosen: run portalctl tenants use SLUG (or --tenant).",
                           Exit.USAGE)
        return tenant


@dataclass
class Credentials:
    """A bearer token: a personal API token (afp_…) or a Keycloak access token with what it
    takes to renew it."""

    access_token: str = ""
    kind: str = "token"  # "token" (personal or pasted), "oidc" (device sign-in) or "env"
    server: str = ""  # the portal it was given for; never sent to another
    refresh_token: str = ""
    expires_at: float = 0.0
    token_endpoint: str = ""
    revocation_endpoint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls) -> Credentials | None:
        token = os.environ.get("PORTALCTL_TOKEN")
        if token:
            return cls(access_token=token.strip(), kind="env")
        path = config_dir() / "credentials.json"
        data = _read(path)
        if not data.get("access_token"):
            return None
        try:
            credentials = cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
            credentials.expires_at = float(credentials.expires_at)
        except (TypeError, ValueError) as exc:
            raise CliError(f"Cannot read {path}: {exc}. Run portalctl login.", Exit.ERROR) from exc
        for name in ("access_token", "kind", "server", "refresh_token", "token_endpoint",
                     "revocation_endpoint"):
            if not isinstance(getattr(credentials, name), str):
                raise CliError(f"Cannot read {path}: its {name} is not text. Run portalctl "
                               f"login.", Exit.ERROR)
        if not credentials.server:  # kept before servers were recorded: the stored one's
            credentials.server = Config.load(environment=False).server
        return credentials

    def save(self) -> None:
        write_private(config_dir() / "credentials.json", json.dumps(asdict(self), indent=2) + "\n")

    def check_server(self, server: str) -> None:
        """Refuse to send these credentials to any portal but the one they were given for."""
        if self.kind != "env" and self.server.rstrip("/") != server.rstrip("/"):
            raise CliError(f"Signed in to {self.server or 'another portal'}, not {server}: run "
                           f"portalctl login.", Exit.AUTH)

    @staticmethod
    def forget() -> bool:
        path = config_dir() / "credentials.json"
        try:
            existed = path.exists() or path.is_symlink()
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise CliError(f"Cannot remove {path}: {exc}", Exit.ERROR) from exc
        return existed
