"""A manifest checked against its schema, as the tests' renderings are: a custom resource
against its CRD's `openAPIV3Schema`, a built-in kind against Kubernetes' own
(kubernetes-validate, strict: unknown fields are errors) at `KUBERNETES_MINOR`, the release
the portal is validated against (docs/deployment.md)."""

from __future__ import annotations

from typing import Any

import jsonschema
import kubernetes_validate

KUBERNETES_MINOR = "1.35"


def schema_errors(manifest: dict[str, Any], crd_schema: dict[str, Any] | None = None) -> list[str]:
    """Every violation of `manifest` (empty when it validates): of `crd_schema` when given,
    else of the built-in kind's schema."""
    if crd_schema is not None:
        validator = jsonschema.Draft7Validator(crd_schema)
        return [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(manifest)
        ]
    try:
        kubernetes_validate.validate(manifest, KUBERNETES_MINOR, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [str(exc).splitlines()[0]]
    return []
