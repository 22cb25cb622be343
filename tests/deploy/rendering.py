"""Render the Kustomize overlays with `kubectl kustomize` and validate what they hold.

Built-in kinds go through `kubernetes-validate` (strict) at the Kubernetes minor the docs name;
the prometheus-operator kinds through jsonschema's Draft 7 over their CRDs' openAPIV3Schema,
copied into tests/data/prometheus-operator/.
"""

import copy
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.support.manifest_schemas import schema_errors as manifest_schema_errors

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OVERLAYS = sorted(p.parent.name for p in (DEPLOY / "overlays").glob("*/kustomization.yaml"))
CRD_DIR = ROOT / "tests" / "data" / "prometheus-operator"
CRD_FILES = {
    "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
    "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
}
PREPARE_LABEL = "portal.ai-factory/stage"


@cache
def _render(path: str) -> tuple[dict[str, Any], ...]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl renders the manifests (apt-get install kubectl, or its release binary)"
    result = subprocess.run(
        [kubectl, "kustomize", path], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def render(overlay: str) -> list[dict[str, Any]]:
    """The overlay's objects, a fresh copy each time (a test may change what it gets)."""
    return copy.deepcopy(list(_render(str(DEPLOY / "overlays" / overlay))))


def render_base() -> list[dict[str, Any]]:
    return copy.deepcopy(list(_render(str(DEPLOY / "base"))))


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in of_kind(objects, kind) if o["metadata"]["name"] == name]
    return found


def pod_specs(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every pod template, by `<kind>/<name>` of its owner."""
    return {
        f"{o['kind']}/{o['metadata']['name']}": o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in {"Deployment", "StatefulSet", "DaemonSet", "Job"}
    }


@cache
def crd_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRD_DIR / CRD_FILES[kind]).read_text())
    assert crd["spec"]["names"]["kind"] == kind
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return _python_patterns(served["schema"]["openAPIV3Schema"])


def _python_patterns(node: Any) -> Any:
    """Python's re refuses a global flag after `^`: `^(?i)x` becomes `(?i)^x` (same meaning)."""
    if isinstance(node, dict):
        return {
            key: (
                "(?i)^" + value[len("^(?i)"):]
                if key == "pattern" and isinstance(value, str) and value.startswith("^(?i)")
                else _python_patterns(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_python_patterns(item) for item in node]
    return node


def schema_errors(manifest: dict[str, Any]) -> list[str]:
    """Every schema violation of `manifest` (empty when it validates)."""
    if manifest["kind"] in CRD_FILES:
        assert manifest["apiVersion"] == "monitoring.coreos.com/v1"
        return manifest_schema_errors(manifest, crd_schema(manifest["kind"]))
    return manifest_schema_errors(manifest)
