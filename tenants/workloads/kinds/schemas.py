"""The upstream schemas every manifest a workload kind builds is checked against before
anything is sent to a cluster.

Vendored, gzipped, in `schemas/`, one file per custom resource kind, named
`<group>_<version>.<Kind>.json.gz` (e.g. `serving.kserve.io_v1beta1.InferenceService.json.gz`)
and holding that version's `openAPIV3Schema` exactly as the upstream CRD defines it; Helm
values schemas are `<chart>-values.schema.json.gz`. Their provenance is in `schemas/README.md`.

CRD schemas are OpenAPI 3.0-flavoured JSON Schema: Draft 7 validates them (types, required,
enums, patterns); CEL rules (`x-kubernetes-validations`), defaults and webhooks are not
evaluated here, so each kind asserts the CEL rules that matter itself. Built-in kinds (Secret,
Service, …) have no file here: the typed client and the API server check them.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
BUILT_IN_GROUPS = frozenset(
    {"", "apps", "batch", "networking.k8s.io", "policy", "rbac.authorization.k8s.io"}
)


class UnknownSchema(LookupError):
    """No vendored schema for a custom resource kind: add its CRD's schema to `schemas/`."""


def _file_for(api_version: str, kind: str) -> Path:
    group, _, version = api_version.rpartition("/")
    return SCHEMA_DIR / f"{group}_{version}.{kind}.json.gz"


@cache
def _load(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


@cache
def _validator(api_version: str, kind: str) -> jsonschema.Draft7Validator | None:
    group = api_version.rpartition("/")[0]
    if group in BUILT_IN_GROUPS:
        return None
    path = _file_for(api_version, kind)
    if not path.exists():
        raise UnknownSchema(f"no vendored schema for {api_version} {kind} ({path.name})")
    return jsonschema.Draft7Validator(_load(path))


def _messages(validator: jsonschema.protocols.Validator, instance: Any) -> list[str]:
    return sorted(
        f"{'.'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(instance)
    )


def manifest_errors(manifest: dict[str, Any]) -> list[str]:
    """Every violation of its kind's upstream schema (built-in kinds: none checked here)."""
    validator = _validator(manifest.get("apiVersion", ""), manifest.get("kind", ""))
    return [] if validator is None else _messages(validator, manifest)


def values_errors(chart: str, values: dict[str, Any]) -> list[str]:
    """Every violation of a Helm chart's own values schema (`<chart>-values.schema.json.gz`)."""
    schema = _load(SCHEMA_DIR / f"{chart}-values.schema.json.gz")
    validator_class = jsonschema.validators.validator_for(schema)
    return _messages(validator_class(schema), values)


class InvalidManifest(ValueError):
    """A manifest the portal built breaks its upstream schema: a bug in the kind's builder."""


def check_manifests(manifests: list[dict[str, Any]]) -> None:
    """Raise InvalidManifest naming every object and violation, if there is any."""
    problems = {
        f"{m.get('kind')}/{(m.get('metadata') or {}).get('name')}": errors
        for m in manifests
        if (errors := manifest_errors(m))
    }
    if problems:
        raise InvalidManifest(json.dumps(problems, indent=1)[:4000])
