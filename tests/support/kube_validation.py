"""What the emulator checks before it stores an object, as a real API server's admission does.

Every object written over the API (create, update, merge/JSON patch, server-side apply, status
writes) is checked against its schema: custom resources against the vendored CRD's
`openAPIV3Schema` (`tenants/workloads/kinds/schemas/`, Kueue's CRDs in `tests/data/kueue/`),
built-in kinds against Kubernetes' own (kubernetes-validate, `KUBERNETES_MINOR`). Then the CRD's
CEL rules (`x-kubernetes-validations`) are evaluated with cel-python, on the object with its
schema defaults filled in (the API server defaults before it validates).

Unknown fields, as the API server treats them (KEP-2885, Kubernetes >= 1.27):
- server-side apply refuses them whatever `fieldValidation` says (structured merge needs every
  field typed): 400 BadRequest "field not declared in schema";
- create, update and merge/JSON patch refuse them with 400 BadRequest "strict decoding error"
  only under `fieldValidation=Strict`; without it (the `kubernetes` client sends none, so the
  server's default `Warn` applies) or with `Ignore` they are pruned and the rest is stored.
A schema violation or a failed CEL rule is 422 Invalid with `details.causes` naming field paths.
Not checked: name formats, admission webhooks, immutable built-in fields, ratcheting.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import string
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import celpy.evaluation
import jsonschema
import kmock
import yaml
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

from tenants.workloads.kinds.schemas import SCHEMA_DIR
from tests.support.manifest_schemas import KUBERNETES_MINOR

# The Kubernetes minor whose built-in schemas apply (tests/tenants/kube_schemas.py names it too).
KUEUE_DIR = Path(__file__).resolve().parents[1] / "data" / "kueue"
KUEUE_FILES = {
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "ResourceFlavor": "resourceflavors",
    "Cohort": "cohorts",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Workload": "workloads",
}
# Kinds the emulator serves with no schema: only tests playing their controllers write them.
UNCHECKED_KINDS: dict[tuple[str, str], str] = {
    ("kubevirt.io/v1", "VirtualMachineInstance"): "created by KubeVirt, never by the portal",
    ("cdi.kubevirt.io/v1beta1", "DataVolume"): "created by KubeVirt from dataVolumeTemplates",
    ("serving.kserve.io/v1alpha1", "ClusterServingRuntime"): "installed with KServe",
}
# CEL rules of the vendored CRDs that cel-python cannot evaluate, skipped with the reason.
# A rule calling a function cel-python lacks (e.g. Kubernetes' quantity(), isURL(),
# lowerAscii()) and not listed here makes the emulator answer 500, so that a newly vendored CRD
# cannot skip a rule silently.
_HOSTNAME = r"'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$'"
SKIPPED_RULES: dict[str, str] = {
    "self.all(h, !isIP(h))":
        "TLSRoute hostnames: isIP() is Kubernetes' IP library; the portal writes names under "
        "VCLUSTER_DOMAIN, never addresses",
    "self.all(h, h.contains('*') ? (h.startsWith('*.') && h.substring(2).matches("
    + _HOSTNAME + ")) : true)":
        "TLSRoute wildcard hostnames: substring() is Kubernetes' strings extension; the portal "
        "writes no wildcard",
}
# Kubernetes' CEL string functions the vendored rules call (Envoy Gateway's SecurityPolicy) and
# cel-python lacks, supplied here: ASCII case folding, as the API server's strings library does.
KUBERNETES_FUNCTIONS = {
    "lowerAscii": lambda text: celpy.celtypes.StringType(
        str(text).translate(str.maketrans(string.ascii_uppercase, string.ascii_lowercase))),
    "upperAscii": lambda text: celpy.celtypes.StringType(
        str(text).translate(str.maketrans(string.ascii_lowercase, string.ascii_uppercase))),
}
# Compiled when the emulator starts (`warm_up`): their first request would otherwise spend
# most of the gateway's request timeout compiling CEL.
WARMED_KINDS = (
    ("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"),
)
CEL_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})
OBJECT_META = "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _reject(
    status: int, reason: str, message: str, details: dict[str, Any]
) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=status, reason=reason, message=message, details=details)


# --- schemas ---------------------------------------------------------------------------------


@cache
def _builtin_registry() -> tuple[str, Registry]:
    version = [
        v for v in kv_utils.all_versions()
        if kv_utils.major_minor(v) <= KUBERNETES_MINOR
    ][-1]
    schema_dir = f"kubernetes-json-schema/v{version}-local-strict"
    definitions = kv_utils.schema_contents(f"{schema_dir}/_definitions.json", KUBERNETES_MINOR)
    return schema_dir, Resource.from_contents(definitions) @ Registry()


def _builtin_validator(api_version: str, kind: str) -> jsonschema.Validator | None:
    schema_dir, registry = _builtin_registry()
    name = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(f"{schema_dir}/{kind.lower()}-{name}.json", "")
    except FileNotFoundError:
        return None
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _crd_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    group, _, version = api_version.rpartition("/")
    if group == "kueue.x-k8s.io" and kind in KUEUE_FILES:
        crd = yaml.safe_load((KUEUE_DIR / f"{group}_{KUEUE_FILES[kind]}.yaml").read_text())
        (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
        return served["schema"]["openAPIV3Schema"]
    path = SCHEMA_DIR / f"{group}_{version}.{kind}.json.gz"
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else None


@cache
def _schema_for(api_version: str, kind: str) -> tuple[str, Any]:
    """("crd", openAPIV3Schema), ("builtin", validator), or ("none", reason)."""
    if (api_version, kind) in UNCHECKED_KINDS:
        return "none", UNCHECKED_KINDS[(api_version, kind)]
    if (schema := _crd_schema(api_version, kind)) is not None:
        return "crd", schema
    if (validator := _builtin_validator(api_version, kind)) is not None:
        return "builtin", validator
    raise _reject(
        500, "InternalError",
        f"the emulator has no schema for {api_version} {kind}: vendor its CRD's schema "
        "(tests/support/kube_validation.py)", {},
    )


@cache
def _crd_validator(api_version: str, kind: str) -> jsonschema.Validator:
    return jsonschema.Draft7Validator(_schema_for(api_version, kind)[1])


@cache
def _object_meta_validator() -> jsonschema.Validator:
    return jsonschema.Draft202012Validator({"$ref": OBJECT_META}, registry=_builtin_registry()[1])


# --- paths and causes ------------------------------------------------------------------------


def _field(path: list[Any] | tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _join(base: list[Any], *more: Any) -> list[Any]:
    return [*base, *more]


def _cause(error: jsonschema.ValidationError, prefix: tuple[Any, ...] = ()) -> dict[str, str]:
    path = [*prefix, *error.absolute_path]
    if error.validator == "required":
        missing = re.match(r"'([^']*)'", error.message)
        field = _field([*path, missing[1] if missing else "?"])
        return {"reason": "FieldValueRequired", "message": "Required value", "field": field}
    if error.validator == "enum":
        supported = ", ".join(json.dumps(v) for v in error.validator_value)
        return {
            "reason": "FieldValueNotSupported",
            "message": f"Unsupported value: {json.dumps(error.instance)}: supported values: "
            f"{supported}",
            "field": _field(path),
        }
    reason = "FieldValueTypeInvalid" if error.validator == "type" else "FieldValueInvalid"
    return {
        "reason": reason,
        "message": f"Invalid value: {json.dumps(error.instance)[:200]}: {error.message[:300]}",
        "field": _field(path),
    }


# --- unknown fields --------------------------------------------------------------------------


def _prune_crd(value: Any, schema: dict[str, Any], path: list[Any], unknown: list[str]) -> Any:
    """`value` without the fields its structural schema does not declare (listed in `unknown`),
    and without nulls where the schema is not nullable (the API server drops those too)."""
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        result = {}
        for key, item in value.items():
            sub = (properties or {}).get(key) if properties and key in properties else extra
            if item is None and not (isinstance(sub, dict) and sub.get("nullable")):
                continue
            if properties is not None and key not in properties and not extra:
                unknown.append(_field(_join(path, key)))
                continue
            result[key] = _prune_crd(item, sub, _join(path, key), unknown) if sub else item
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        return [_prune_crd(v, items, _join(path, i), unknown) for i, v in enumerate(value)]
    return value


def _prune_strict(
    obj: dict[str, Any], validator: jsonschema.Validator, prefix: list[Any], unknown: list[str]
) -> dict[str, Any]:
    """`obj` without the fields a strict built-in schema refuses as additional properties."""
    obj = copy.deepcopy(obj)
    for _ in range(20):  # each pass removes at least one field; nested ones go with their parent
        extras = [e for e in validator.iter_errors(obj) if e.validator == "additionalProperties"]
        if not extras:
            break
        for error in extras:
            holder: Any = obj
            for part in error.absolute_path:
                holder = holder[part]
            for key in [k for k in holder if k not in error.schema.get("properties", {})]:
                unknown.append(_field([*prefix, *error.absolute_path, key]))
                del holder[key]
    return obj


def _pruned(obj: dict[str, Any], kind: str, schema: Any) -> tuple[dict[str, Any], list[str]]:
    unknown: list[str] = []
    if kind == "builtin":
        return _prune_strict(obj, schema, [], unknown), unknown
    pruned = _prune_crd(obj, schema, [], unknown)
    if isinstance(pruned.get("metadata"), dict):
        pruned["metadata"] = _prune_strict(
            pruned["metadata"], _object_meta_validator(), ["metadata"], unknown
        )
    return pruned, unknown


# --- CEL -------------------------------------------------------------------------------------


def _with_defaults(value: Any, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        result = dict(value)
        for key, sub in (schema.get("properties") or {}).items():
            if key not in result and isinstance(sub, dict) and "default" in sub:
                result[key] = copy.deepcopy(sub["default"])
            if key in result:
                result[key] = _with_defaults(result[key], sub)
        if isinstance(extra := schema.get("additionalProperties"), dict):
            for key in set(result) - set(schema.get("properties") or {}):
                result[key] = _with_defaults(result[key], extra)
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_with_defaults(v, schema["items"]) for v in value]
    return value


@cache
def _program(rule: str) -> celpy.Runner:
    called = set(re.findall(r"([A-Za-z_]\w*)\s*\(", re.sub(r"'[^']*'|\"[^\"]*\"", "", rule)))
    lacking = called - set(celpy.evaluation.base_functions) - CEL_MACROS - set(KUBERNETES_FUNCTIONS)
    if lacking:
        raise _reject(
            500, "InternalError",
            f"CEL rule {rule!r} calls {sorted(lacking)}, which cel-python lacks: list it in "
            "SKIPPED_RULES (tests/support/kube_validation.py) with the reason",
            {},
        )
    env = celpy.Environment()
    return env.program(env.compile(rule), functions=KUBERNETES_FUNCTIONS)


def _rules(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        yield from (rule["rule"] for rule in schema.get("x-kubernetes-validations") or [])
        for value in schema.values():
            yield from _rules(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _rules(value)


@cache
def warm_up() -> None:
    """Compile the CEL rules of WARMED_KINDS once per process."""
    for api_version, kind in WARMED_KINDS:
        for rule in set(_rules(_schema_for(api_version, kind)[1])) - set(SKIPPED_RULES):
            _program(rule)


_MISSING = object()


def _cel_causes(value: Any, old: Any, schema: Any, path: list[Any]) -> list[dict[str, str]]:
    if not isinstance(schema, dict):
        return []
    causes = []
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule["rule"]
        if text in SKIPPED_RULES:
            continue
        transition = re.search(r"\boldSelf\b", text) is not None
        if transition and old is _MISSING:
            continue  # a transition rule applies to updates of a value that existed before
        activation = {"self": celpy.json_to_cel(value)}
        if transition:
            activation["oldSelf"] = celpy.json_to_cel(old)
        try:
            outcome = _program(text).evaluate(activation)
            failed = isinstance(outcome, celpy.CELEvalError) or not bool(outcome)
        except celpy.CELEvalError:
            failed = True
        if failed:
            shown = {dict: "object", list: "array"}.get(type(value), json.dumps(value)[:100])
            field = _field(path + (rule.get("fieldPath", "").lstrip(".").split(".")
                                   if rule.get("fieldPath") else []))
            causes.append({
                "reason": rule.get("reason", "FieldValueInvalid"),
                "message": f'Invalid value: "{shown}": {rule.get("message") or text}',
                "field": field,
            })
    if isinstance(value, dict):
        olds = old if isinstance(old, dict) else {}
        for key, item in value.items():
            properties = schema.get("properties") or {}
            sub = properties.get(key) if key in properties else schema.get("additionalProperties")
            causes += _cel_causes(item, olds.get(key, _MISSING), sub, _join(path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        # Old list items are correlated only for maps keyed by x-kubernetes-list-map-keys;
        # none of the vendored transition rules sit under a list, so items get none.
        for i, item in enumerate(value):
            causes += _cel_causes(item, _MISSING, schema["items"], _join(path, i))
    return causes


# --- admission -------------------------------------------------------------------------------


def _names(request: kmock.Request, kind: str, obj: dict[str, Any]) -> tuple[str, str, str]:
    resource = request.resource
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    name = request.name or (obj.get("metadata") or {}).get("name") or ""
    return api_version, f"{kind}.{resource.group}" if resource.group else kind, name


def admit(
    request: kmock.Request, candidate: dict[str, Any], live: dict[str, Any] | None, *, kind: str
) -> dict[str, Any]:
    """The object to store for this write, or a KubernetesError the API server would answer."""
    api_version, qualified, name = _names(request, kind, candidate)
    candidate = {"apiVersion": api_version, "kind": kind, **candidate}
    schema_kind, schema = _schema_for(api_version, kind)
    if schema_kind == "none":
        return candidate
    content_type = next(
        (v for k, v in request.headers.items() if k.lower() == "content-type"), ""
    )
    details = {"name": name, "group": request.resource.group, "kind": kind}
    if "apply-patch" in content_type:
        applied = {"apiVersion": api_version, "kind": kind, **(request.data or {})}
        _, unknown = _pruned(applied, schema_kind, schema)
        if unknown:
            gvk = f"{api_version}, Kind={kind}"
            raise _reject(
                400, "BadRequest",
                f"failed to create typed patch object ({gvk}): "
                + "; ".join(f".{field}: field not declared in schema" for field in unknown),
                details,
            )
    pruned, unknown = _pruned(candidate, schema_kind, schema)
    if unknown and request.params.get("fieldValidation") == "Strict":
        version = api_version.rpartition("/")[2]
        raise _reject(
            400, "BadRequest",
            f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: '
            + ", ".join(f'unknown field "{field}"' for field in unknown),
            details,
        )
    if schema_kind == "builtin":
        causes = [_cause(e) for e in schema.iter_errors(pruned)]
    else:
        causes = [_cause(e) for e in _crd_validator(api_version, kind).iter_errors(pruned)]
        meta = _object_meta_validator().iter_errors(pruned.get("metadata") or {})
        causes += [_cause(e, ("metadata",)) for e in meta]
    if schema_kind == "crd":
        old = _with_defaults(live, schema) if live is not None else _MISSING
        causes += _cel_causes(_with_defaults(pruned, schema), old, schema, [])
    if causes:
        summary = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
        raise _reject(
            422, "Invalid", f'{qualified} "{name}" is invalid: [{summary}]',
            {**details, "causes": causes},
        )
    return pruned
