"""The objects a notebook's spec becomes, in apply order: the person's home volume, the
StatefulSet running the notebook's one pod (none while stopped), its Service, and with an
exposure the OIDC SecurityPolicy and the HTTPRoute it guards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import gateway_routes
from ..base import (
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    MANAGED_BY,
    BuildContext,
    Manifest,
    SpecError,
)
from ..gateway_routes import SECURITY_POLICY
from ..gpu_input import Gpu
from ..naming import bounded_label
from .spec import HOME_PREFIX, INTERFACES, PORT

PVC = ("v1", "PersistentVolumeClaim")
STATEFUL_SET = ("apps/v1", "StatefulSet")
SERVICE = ("v1", "Service")
POD = ("v1", "Pod")
NOTEBOOK_LABEL = "portal.ai-factory.io/notebook"
HOME_OF_LABEL = "portal.ai-factory.io/home-of"
CONTAINER = "notebook"
SERVICE_PORT = 80
# The StatefulSet's controller labels each pod `controller-revision-hash: <name>-<hash>`, a
# 63-character label value: its name is at most 52 characters.
MAX_NAME = 52
# Jupyter Docker Stacks' user jovyan (uid 1000) in group users (100); code-server's coder is
# uid 1000 too. The home volume is made group-writable for 100 (fsGroup), once.
RUN_AS_USER = 1000
FS_GROUP = 100
# The gateway's sign-in: the cookies Envoy keeps the tokens in (their own names, so they never
# collide with the notebook's cookies) and the paths it answers itself.
ACCESS_COOKIE = "portal-nb-access"
ID_COOKIE = "portal-nb-id"
CALLBACK_PATH = "/oauth2/callback"
LOGOUT_PATH = "/oauth2/logout"
JWT_PROVIDER = "keycloak"
SCOPES = ("openid", "profile", "email")


def notebook_name(workload_name: str) -> str:
    """`nb-<name>`: the StatefulSet's, the Service's and the HTTPRoute's name."""
    return bounded_label(f"nb-{workload_name}", MAX_NAME, prefix="nb")


def pod_name(workload_name: str) -> str:
    return f"{notebook_name(workload_name)}-0"


def policy_name(workload_name: str) -> str:
    return f"{notebook_name(workload_name)}-sign-in"


def hostname(ctx: BuildContext) -> str:
    """`<nb-name>-<tenant>.<domain>` (`gateway_routes.hostname`)."""
    return gateway_routes.hostname(ctx, notebook_name(ctx.name))


def home_volume(spec: Mapping[str, Any], ctx: BuildContext) -> Manifest:
    """The person's home: the tenant's and the portal's labels, not the workload's. It outlives
    the notebook (every notebook the person launches in the tenant mounts it): the machinery
    never observes, prunes or deletes an object without the workload-id label."""
    storage: dict[str, Any] = {
        "accessModes": [spec["home_access_mode"]],
        "resources": {"requests": {"storage": f"{int(spec['home_gib'])}Gi"}},
    }
    if spec.get("home_storage_class"):
        storage["storageClassName"] = spec["home_storage_class"]
    return {
        "apiVersion": PVC[0],
        "kind": PVC[1],
        "metadata": {
            "name": spec["home"],
            "namespace": ctx.namespace,
            "labels": {
                LABEL_MANAGED_BY: MANAGED_BY,
                LABEL_TENANT: ctx.tenant_slug,
                HOME_OF_LABEL: spec["home"].removeprefix(HOME_PREFIX),
            },
        },
        "spec": storage,
    }


def _container(spec: Mapping[str, Any], gpu: Gpu | None) -> dict[str, Any]:
    interface = INTERFACES[spec["interface"]]
    amounts = {"cpu": str(int(spec["cpu"])), "memory": f"{int(spec['memory_gib'])}Gi"}
    if gpu is not None:
        amounts |= gpu.resources(int(spec.get("gpus") or 1), spec.get("gpu_memory_gib"),
                                 spec.get("gpu_cores"))
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec["image_ref"],
        **({"command": list(interface.command)} if interface.command else {}),
        "args": list(interface.args),
        "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
        # Requests = limits: the quota counts what it holds, and the namespace's LimitRange
        # default limit cannot undercut the request.
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
        "volumeMounts": [
            {"name": "home", "mountPath": interface.home},
            # PyTorch's DataLoader workers share tensors through /dev/shm: the runtime's 64 MiB
            # is too small (it counts against the memory limit).
            {"name": "dshm", "mountPath": "/dev/shm"},  # noqa: S108 (a mount point, no file)
        ],
        "readinessProbe": {
            "httpGet": {"path": interface.health, "port": "http"},
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
    }
    if gpu is None:
        # CUDA images ask the NVIDIA runtime for every GPU (NVIDIA_VISIBLE_DEVICES=all): a pod
        # that holds none must see none where the runtime is the node's default.
        container["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    return container


def stateful_set(spec: Mapping[str, Any], ctx: BuildContext) -> Manifest:
    """One pod (none while stopped) in the tenant's Kueue queue: through its default queue
    with a whole GPU or a MIG instance, its `shares` queue with a HAMi share, by the priority
    label alone without a GPU (Kueue's LocalQueue defaulting)."""
    name = notebook_name(ctx.name)
    gpu = Gpu.of(spec["gpu"]) if spec.get("gpu") else None
    if gpu is not None:
        # Launched while the tenant was shared; it is dedicated now: no partition for it.
        gpu.refuse_if_dedicated(ctx, "notebook")
    pod_labels = {**ctx.labels, NOTEBOOK_LABEL: name}
    pod_labels |= gpu.admission_labels(ctx) if gpu is not None else dict(ctx.priority_labels)
    pod_metadata: dict[str, Any] = {"labels": pod_labels}
    pod_spec: dict[str, Any] = {
        "securityContext": {
            "runAsUser": RUN_AS_USER,
            "fsGroup": FS_GROUP,
            # A home of many files is not walked at every start, only when its root is wrong.
            "fsGroupChangePolicy": "OnRootMismatch",
        },
        "containers": [_container(spec, gpu)],
        "volumes": [
            {"name": "home", "persistentVolumeClaim": {"claimName": spec["home"]}},
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        ],
    }
    if gpu is not None:
        pod_spec |= gpu.placement(ctx)
        if annotations := gpu.pod_annotations:
            pod_metadata["annotations"] = annotations
    else:
        # Dedicated tenants run on their reserved nodes only.
        if selector := ctx.gpu_node_selector(None):
            pod_spec["nodeSelector"] = selector
        if tolerations := ctx.gpu_tolerations():
            pod_spec["tolerations"] = tolerations
    return {
        "apiVersion": STATEFUL_SET[0],
        "kind": STATEFUL_SET[1],
        "metadata": ctx.metadata(name, labels={NOTEBOOK_LABEL: name}),
        "spec": {
            "replicas": 1 if spec.get("running", True) else 0,
            "serviceName": name,
            "selector": {"matchLabels": {NOTEBOOK_LABEL: name}},
            "template": {"metadata": pod_metadata, "spec": pod_spec},
        },
    }


def service(ctx: BuildContext) -> Manifest:
    name = notebook_name(ctx.name)
    return {
        "apiVersion": SERVICE[0],
        "kind": SERVICE[1],
        "metadata": ctx.metadata(name, labels={NOTEBOOK_LABEL: name}),
        "spec": {
            "selector": {NOTEBOOK_LABEL: name},
            "ports": [{"name": "http", "protocol": "TCP", "port": SERVICE_PORT,
                       "targetPort": "http"}],
        },
    }


def sign_in_policy(ctx: BuildContext) -> Manifest:
    """Envoy Gateway's OIDC sign-in with Keycloak in front of the route, then the access token
    (kept in its cookie) checked as a JWT and admitted only when its groups claim names one of
    the tenant's groups: signed in is not enough, a member of the tenant is."""
    exposure = ctx.exposure
    assert exposure is not None and exposure.oidc is not None
    oidc = exposure.oidc
    host = hostname(ctx)
    return {
        "apiVersion": SECURITY_POLICY[0],
        "kind": SECURITY_POLICY[1],
        "metadata": ctx.metadata(policy_name(ctx.name)),
        "spec": {
            "targetRefs": [gateway_routes.target(notebook_name(ctx.name))],
            "oidc": {
                "provider": {"issuer": oidc.issuer},
                "clientID": oidc.client_id,
                "clientSecret": {"name": oidc.client_secret_name},
                "redirectURL": f"https://{host}{CALLBACK_PATH}",
                "logoutPath": LOGOUT_PATH,
                "cookieNames": {"accessToken": ACCESS_COOKIE, "idToken": ID_COOKIE},
                "scopes": list(SCOPES),
                # Envoy (1.35 and later) encrypts the token cookies by default, and the JWT
                # filter below cannot read an encrypted one: every request would be denied.
                # The cookies stay HttpOnly and Secure, for the notebook's host alone.
                "disableTokenEncryption": True,
            },
            "jwt": {
                "providers": [{
                    "name": JWT_PROVIDER,
                    "issuer": oidc.issuer,
                    "remoteJWKS": {"uri": oidc.jwks_uri},
                    "extractFrom": {"cookies": [ACCESS_COOKIE]},
                }],
            },
            "authorization": {
                "defaultAction": "Deny",
                "rules": [{
                    "name": "tenant-members",
                    "action": "Allow",
                    "principal": {"jwt": {
                        "provider": JWT_PROVIDER,
                        "claims": [{"name": oidc.groups_claim, "valueType": "StringArray",
                                    "values": list(oidc.allowed_groups)}],
                    }},
                }],
            },
        },
    }


def manifests(spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
    if not spec.get("home"):
        raise SpecError({"home": ["No home volume: a notebook is launched by a person."]})
    objects = [home_volume(spec, ctx), stateful_set(spec, ctx), service(ctx)]
    if ctx.exposure is not None and ctx.exposure.oidc is not None:
        # The policy first: the route is never reachable without the sign-in.
        name = notebook_name(ctx.name)
        objects += [sign_in_policy(ctx), gateway_routes.http_route(ctx, name, name, SERVICE_PORT)]
    return objects
