"""Where portalctl keeps its state: $XDG_CONFIG_HOME/portalctl (~/.config/portalctl).

`config.json` holds the server, the identity provider and the current tenant; `credentials.json`
the token of the last sign-in. Both are written mode 0600 (their folder 0700), atomically.
PORTALCTL_SERVER and PORTALCTL_TOKEN override what is stored, for scripts and CI.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .exits import CliError, Exit

DEFAULT_CLIENT_ID = "portal-cli"


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "portalctl"


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by its owner only, replacing it in one step."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CliError(f"Cannot read {path}: {exc}", Exit.ERROR) from exc
    return data if isinstance(data, dict) else {}


@dataclass
class Config:
    server: str = ""
    issuer: str = ""
    client_id: str = DEFAULT_CLIENT_ID
    tenant: str = ""

    @classmethod
    def load(cls) -> Config:
        data = _read(config_dir() / "config.json")
        config = cls(**{k: str(v) for k, v in data.items() if k in cls.__dataclass_fields__})
        config.server = os.environ.get("PORTALCTL_SERVER") or config.server
        config.server = config.server.rstrip("/")
        return config

    def save(self) -> None:
        write_private(config_dir() / "config.json", json.dumps(asdict(self), indent=2) + "\n")

    def require_server(self) -> str:
        if not self.server:
            raise CliError("No portal configured: run portalctl login --server URL.", Exit.AUTH)
        return self.server

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
    kind: str = "token"  # "token" (personal or pasted) or "oidc" (device sign-in)
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
        data = _read(config_dir() / "credentials.json")
        if not data.get("access_token"):
            return None
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def save(self) -> None:
        write_private(config_dir() / "credentials.json", json.dumps(asdict(self), indent=2) + "\n")

    @staticmethod
    def forget() -> bool:
        path = config_dir() / "credentials.json"
        existed = path.exists()
        path.unlink(missing_ok=True)
        return existed
