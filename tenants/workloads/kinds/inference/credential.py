"""An inference endpoint's model credential: which of the tenant's credentials (a Hugging Face
token, S3 keys) its storage initializer and vLLM load the model with (docs/workloads.md, "Model
credentials"). Pure: the tenant's credentials come in the LaunchContext, by name and kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tenants.credentials.manifests import SCHEME_OF_KIND, predictor_references

from ..base import LaunchContext
from ..spec_input import SpecFields

FIELD = "credential"
KIND_LABELS = {"huggingface": "a Hugging Face token", "s3": "an S3 access key"}
KIND_OF_SCHEME = {scheme: kind for kind, scheme in SCHEME_OF_KIND.items()}


def read_credential(fields: SpecFields, model_uri: str | None, ctx: LaunchContext) -> str | None:
    """The credential's name, if one is picked: it must be the tenant's, of the kind the model
    URI's scheme needs (a Hugging Face token for hf://, S3 keys for s3://); none for pvc://."""
    value = fields.spec.get(FIELD)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or len(value) > 63:
        fields.error(FIELD, "The name of one of the tenant's model credentials.")
        return None
    name = value.strip()
    kind = ctx.credentials.get(name)
    if kind is None:
        known = ", ".join(sorted(ctx.credentials)) or "none yet"
        fields.error(FIELD, f"No credential of this name in the tenant (it has {known}).")
        return None
    if model_uri is None:
        return name  # the model URI's own error says what to fix first
    scheme = model_uri.partition("://")[0]
    needed = KIND_OF_SCHEME.get(scheme)
    if needed is None:
        fields.error(FIELD, f"A {scheme}:// model needs no credential: leave it empty.")
        return None
    if kind != needed:
        fields.error(FIELD, f"A {scheme}:// model needs {KIND_LABELS[needed]}; "
                     f"{name} is {KIND_LABELS[kind]}.")
        return None
    return name


def with_credential(predictor: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Point the predictor at the spec's credential, if any: run as its ServiceAccount (KServe
    hands the Secrets it lists to the storage initializer) and, for a Hugging Face token, give
    vLLM `HF_TOKEN` from the Secret."""
    name = spec.get(FIELD)
    if not name:
        return
    kind = KIND_OF_SCHEME.get(str(spec.get("model_uri") or "").partition("://")[0])
    if kind is None:
        return
    account, env = predictor_references(name, kind)
    predictor["serviceAccountName"] = account
    if env:
        predictor["model"]["env"] = [*predictor["model"].get("env", []), *env]
