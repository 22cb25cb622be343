"""A model credential's Kubernetes objects, in the shape KServe's storage initializer reads.
Pure: no Django, no I/O; the inference kind names the same objects from here.

KServe looks for model-storage credentials through the predictor's ServiceAccount: each Secret
the ServiceAccount lists under `secrets` is read by its keys (`HF_TOKEN` for `hf://`,
`AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` for `s3://`) and, for S3, its
`serving.kserve.io/s3-*` annotations, and injected into the storage initializer. So each
credential is one Secret and one ServiceAccount of the same name that lists it; an endpoint
that picks the credential runs as that ServiceAccount. vLLM reads `HF_TOKEN` from its own
environment too (for what it fetches from the Hub itself): the predictor gets it from the
Secret as well.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Manifest = dict[str, Any]

HUGGING_FACE = "huggingface"
S3 = "s3"
# Which model URI scheme each kind opens.
SCHEME_OF_KIND = {HUGGING_FACE: "hf", S3: "s3"}
HF_TOKEN = "HF_TOKEN"  # noqa: S105 (the key's name, not a value)
S3_ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
S3_SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"  # noqa: S105
# The secret values of each kind (what is sealed, and the Secret's keys).
SECRET_KEYS = {HUGGING_FACE: (HF_TOKEN,), S3: (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY)}
S3_ENDPOINT_ANNOTATION = "serving.kserve.io/s3-endpoint"
S3_REGION_ANNOTATION = "serving.kserve.io/s3-region"
S3_USE_HTTPS_ANNOTATION = "serving.kserve.io/s3-usehttps"

OBJECT_PREFIX = "model-cred-"
MAX_NAME = 63 - len(OBJECT_PREFIX)
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "ai-factory-portal"
LABEL_TENANT = "portal.ai-factory.io/tenant"
LABEL_CREDENTIAL = "portal.ai-factory.io/model-credential"
SECRET = ("v1", "Secret")
SERVICE_ACCOUNT = ("v1", "ServiceAccount")
# The objects of every credential carry this: the reconcile lists them to prune.
SELECTOR = f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_CREDENTIAL}"


def object_name(credential_name: str) -> str:
    """The Secret's and the ServiceAccount's name: prefixed, so that no workload's object of the
    same name collides with it."""
    return f"{OBJECT_PREFIX}{credential_name}"


def credential_of(object_name_: str) -> str | None:
    """The credential an object of that name belongs to (None: not a credential's)."""
    if not object_name_.startswith(OBJECT_PREFIX):
        return None
    return object_name_[len(OBJECT_PREFIX):] or None


@dataclass(frozen=True)
class CredentialSpec:
    """What the cluster should hold for one credential, the opened secret values included."""

    name: str
    kind: str  # HUGGING_FACE | S3
    tenant_slug: str
    namespace: str
    values: Mapping[str, str]  # SECRET_KEYS[kind] → the clear value
    s3_endpoint: str = ""
    s3_region: str = ""
    s3_use_https: bool = True


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def credential_manifests(spec: CredentialSpec) -> list[Manifest]:
    """The Secret and the ServiceAccount that lists it, in apply order."""
    name = object_name(spec.name)
    labels = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_TENANT: spec.tenant_slug,
              LABEL_CREDENTIAL: spec.name}
    secret_meta: dict[str, Any] = {"name": name, "namespace": spec.namespace,
                                   "labels": dict(labels)}
    if spec.kind == S3:
        annotations = {S3_USE_HTTPS_ANNOTATION: "1" if spec.s3_use_https else "0"}
        if spec.s3_endpoint:
            annotations[S3_ENDPOINT_ANNOTATION] = spec.s3_endpoint
        if spec.s3_region:
            annotations[S3_REGION_ANNOTATION] = spec.s3_region
        secret_meta["annotations"] = annotations
    return [
        {
            "apiVersion": SECRET[0],
            "kind": SECRET[1],
            "metadata": secret_meta,
            "type": "Opaque",
            # `data`, base64: not `stringData`, which the API server would echo in clear.
            "data": {key: _b64(spec.values[key]) for key in SECRET_KEYS[spec.kind]},
        },
        {
            "apiVersion": SERVICE_ACCOUNT[0],
            "kind": SERVICE_ACCOUNT[1],
            "metadata": {"name": name, "namespace": spec.namespace, "labels": dict(labels)},
            "secrets": [{"name": name}],
        },
    ]


def redacted(manifests: list[Manifest]) -> list[Manifest]:
    """The manifests with every Secret's values blanked: what the portal keeps of an apply."""
    kept = copy.deepcopy(manifests)
    for manifest in kept:
        if (manifest.get("apiVersion"), manifest.get("kind")) == SECRET:
            manifest["data"] = dict.fromkeys(manifest.get("data") or {}, "")
    return kept


def predictor_references(credential_name: str, kind: str) -> tuple[str, list[dict[str, Any]]]:
    """What an InferenceService's predictor needs to use the credential: the ServiceAccount to
    run as (KServe's storage initializer reads the Secrets it lists) and, for a Hugging Face
    token, the model container's `HF_TOKEN` from the Secret (vLLM reads it)."""
    name = object_name(credential_name)
    env = []
    if kind == HUGGING_FACE:
        env.append({"name": HF_TOKEN,
                    "valueFrom": {"secretKeyRef": {"name": name, "key": HF_TOKEN}}})
    return name, env
