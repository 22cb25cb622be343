"""The names the vcluster chart gives what it makes (the release, its kubeconfig Secret, the
control plane's Service) and the Kubernetes versions it pins: shared by the kind's builders and
its connection details."""

from __future__ import annotations

import base64
import binascii

from ..base import Manifest
from ..naming import bounded_label

SECRET = ("v1", "Secret")

# The Kubernetes images vcluster 0.36.1 pins per minor (config.K8SVersionMap at that tag).
KUBERNETES_IMAGE_TAGS: dict[str, str] = {"1.34": "v1.34.0", "1.35": "v1.35.0", "1.36": "v1.36.0"}
SUPPORTED_VERSIONS: tuple[str, ...] = tuple(KUBERNETES_IMAGE_TAGS)  # oldest first
# The fleet's own minor: a virtual API server newer than the host's would accept pod fields
# the host's kubelets do not know.
DEFAULT_VERSION = "1.35"

KUBECONFIG_KEY = "config"
# Helm allows 53 characters; the StatefulSet's `controller-revision-hash` label
# (`<name>-<10 characters>`) allows 52, and `<name>-headless` must stay a 63-character label.
MAX_RELEASE_NAME = 52


def release_name(workload_name: str) -> str:
    """The Helm release (and HelmRelease) name: the workload's name when the chart can use it."""
    return bounded_label(workload_name, MAX_RELEASE_NAME, prefix="vc")


def repository_name(release: str) -> str:
    return f"{release}-charts"


def kubeconfig_secret_name(release: str) -> str:
    return f"vc-{release}"


def server_url(release: str, namespace: str) -> str:
    """The control plane's in-cluster Service (port 443 → 8443), as the kubeconfig names it."""
    return f"https://{release}.{namespace}.svc:443"


def kubeconfig_from_secret(secret: Manifest) -> str:
    """The kubeconfig YAML the `vc-<release>` Secret holds (base64 in `data.config`)."""
    encoded = ((secret or {}).get("data") or {}).get(KUBECONFIG_KEY)
    if not encoded:
        name = ((secret or {}).get("metadata") or {}).get("name", "the Secret")
        raise ValueError(f"{name} has no {KUBECONFIG_KEY!r} key: the vCluster is not up yet")
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, TypeError) as exc:
        raise ValueError(f"the {KUBECONFIG_KEY!r} key is not a base64 kubeconfig") from exc
