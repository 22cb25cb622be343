"""The objects a Slurm cluster's spec becomes for the Slinky operator: the key Secrets (apart,
created once), sssd.conf and gres.conf, the Controller, the GPU NodeSet, the LoginSet, and the
optional RestApi and Accounting with its MariaDB; their names; and the CEL rules jsonschema
does not check."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from inventory import resource_classes

from .. import ssh_access
from ..base import LABEL_WORKLOAD_ID, BuildContext, Manifest, ObjectKey

SLINKY = "slinky.slurm.net/v1beta1"
SLURM_IMAGE_TAG = "26.05-ubuntu26.04"  # the slurm chart 1.2.1's default
IMAGES = {
    "slurmctld": f"ghcr.io/slinkyproject/slurmctld:{SLURM_IMAGE_TAG}",
    "slurmd": f"ghcr.io/slinkyproject/slurmd:{SLURM_IMAGE_TAG}",
    "login": f"ghcr.io/slinkyproject/login:{SLURM_IMAGE_TAG}",
    "slurmrestd": f"ghcr.io/slinkyproject/slurmrestd:{SLURM_IMAGE_TAG}",
    "slurmdbd": f"ghcr.io/slinkyproject/slurmdbd:{SLURM_IMAGE_TAG}",
    "sidecar": "docker.io/library/alpine:3.22",
    "mariadb": "docker.io/library/mariadb:11.4",
}
KEY_BYTES = 1024  # what the slurm chart generates for either key
MIN_KEY_BYTES = 32
SLURM_KEY, JWT_KEY, DB_PASSWORD_KEY, SSSD_CONF_KEY = "slurm.key", "jwt.key", "password", "sssd.conf"
DATABASE, DATABASE_USER, DATABASE_PORT = "slurm_acct_db", "slurm", 3306
RESTAPI_PORT = 6820
LOGIN_PORT = 22
NAME_LIMIT = 40
PARTITION = "gpu"  # the workers' Slurm partition, and their node names' prefix

# What the portal sets on each container other than slurmd (millicores, MiB), requests =
# limits: the namespace's LimitRange would otherwise give each a default, and the demand below
# is their sum rounded up. Init containers are left out: a pod holds the larger of its init
# containers and the sum of its containers, and these are small.
CONTROLLER_CONTAINERS = {
    "slurmctld": (1000, 2048),
    "reconfigure": (100, 128),
    "logfile": (100, 128),
}
LOGIN_CONTAINERS = {"login": (500, 1024)}
WORKER_SIDECARS = {"logfile": (100, 128)}  # per worker, next to slurmd
RESTAPI_CONTAINERS = {"slurmrestd": (500, 512)}
ACCOUNTING_CONTAINERS = {"slurmdbd": (500, 1024), "mariadb": (1000, 2048)}
INIT_CONTAINER = (100, 128)
CONTROLLER_STATE_GIB = 4  # slurmctld's StateSaveLocation
DATABASE_GIB = 10

# Minimal sssd.conf the LoginSet needs (the chart's default): local files only, so SSH as root
# with the spec's key; a directory (LDAP, Keycloak) is a later addition.
SSSD_CONF = """[sssd]
services = nss,pam
domains = DEFAULT

[nss]
filter_groups = root,slurm
filter_users = root,slurm

[pam]

[domain/DEFAULT]
id_provider = proxy
proxy_lib_name = files
auth_provider = proxy
proxy_pam_target = sssd-shadowutils
"""
GRES_CONF = "AutoDetect=nvidia\n"


def _short(name: str, limit: int = NAME_LIMIT) -> str:
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"{name[: limit - 7].rstrip('-')}-{digest}"


class Names:
    """The names of a Slurm workload's objects, and of those the operator derives from them."""

    def __init__(self, ctx: BuildContext) -> None:
        base = _short(ctx.name)
        self.cluster = base  # Controller, Accounting, RestApi
        self.slurm_key = f"{base}-slurm-key"
        self.jwt_key = f"{base}-jwt-key"
        self.db_password = f"{base}-db-password"
        self.sssd = f"{base}-sssd"
        self.gres = f"{base}-gres"
        self.mariadb = f"{base}-mariadb"
        # Volumes the portal makes (not the operator's claim templates): labelled like the
        # rest, so deleting the workload frees their storage.
        self.controller_state = f"{base}-controller-state"
        self.database_data = f"{base}-mariadb-data"
        self.workers = f"{base}-workers"  # NodeSet
        self.login = f"{base}-login"  # LoginSet, its Deployment and Service
        self.controller_app = f"{base}-controller"  # operator's StatefulSet and Service
        self.accounting_app = f"{base}-accounting"
        self.restapi_app = f"{base}-restapi"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _resources(millicores: int, mib: int, **extra: int) -> dict[str, dict[str, str]]:
    amounts = {"cpu": f"{millicores}m", "memory": f"{mib}Mi"} | {
        name: str(count) for name, count in extra.items()
    }
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _container(image: str, millicores: int, mib: int) -> dict[str, Any]:
    return {
        "image": IMAGES[image],
        "imagePullPolicy": "IfNotPresent",
        "resources": _resources(millicores, mib),
    }


def _secret(ctx: BuildContext, name: str, key: str, value: bytes) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": ctx.metadata(name),
        "type": "Opaque",
        # Immutable: a key that changed under a running cluster would lock every node out.
        "immutable": True,
        "data": {key: _b64(value)},
    }


def generated_secrets(spec: Mapping[str, Any], ctx: BuildContext) -> tuple[ObjectKey, ...]:
    """The Secrets `secret_manifests` makes for this spec: create-once, never pruned."""
    names = Names(ctx)
    keys = [("v1", "Secret", names.slurm_key), ("v1", "Secret", names.jwt_key)]
    if spec.get("accounting"):
        keys.append(("v1", "Secret", names.db_password))
    return tuple(keys)


def secret_manifests(
    ctx: BuildContext, slurm_key: bytes, jwt_key: bytes, *, db_password: str | None = None
) -> list[Manifest]:
    """The Secrets holding the cluster's key material, to create once before `manifests()`.

    `slurm_key` authenticates slurmctld, slurmd and sackd to one another (auth/slurm),
    `jwt_key` signs slurmrestd's and scontrol's tokens (auth/jwt, HS256); `db_password`, needed
    when the spec has accounting, is the MariaDB password of slurmdbd. Random, generated by the
    caller: this module has no randomness and no clock.
    """
    for label, key in (("slurm_key", slurm_key), ("jwt_key", jwt_key)):
        if not isinstance(key, bytes) or len(key) < MIN_KEY_BYTES:
            raise ValueError(f"{label} must be at least {MIN_KEY_BYTES} random bytes")
    names = Names(ctx)
    secrets = [
        _secret(ctx, names.slurm_key, SLURM_KEY, slurm_key),
        _secret(ctx, names.jwt_key, JWT_KEY, jwt_key),
    ]
    if db_password is not None:
        if len(db_password) < 16 or not db_password.isascii() or not db_password.isprintable():
            raise ValueError("db_password must be at least 16 printable ASCII characters")
        secrets.append(_secret(ctx, names.db_password, DB_PASSWORD_KEY, db_password.encode()))
    return secrets


def manifests(spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
    """Everything but the key Secrets (`secret_manifests`), in apply order."""
    names = Names(ctx)
    objects: list[Manifest] = [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": ctx.metadata(names.sssd),
            "type": "Opaque",
            "data": {SSSD_CONF_KEY: _b64(SSSD_CONF.encode())},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": ctx.metadata(names.gres),
            "data": {"gres.conf": GRES_CONF},
        },
    ]
    objects.append(_claim(ctx, names.controller_state, CONTROLLER_STATE_GIB))
    if spec.get("accounting"):
        objects.append(_claim(ctx, names.database_data, DATABASE_GIB))
        objects += _database(ctx, names)
        objects.append(_accounting(ctx, names))
    objects += [
        _controller(spec, ctx, names),
        _nodeset(spec, ctx, names),
        _loginset(spec, ctx, names),
    ]
    if spec.get("rest_api"):
        objects.append(_restapi(ctx, names))
    return objects


def _claim(ctx: BuildContext, name: str, gib: int) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ctx.metadata(name),
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": f"{gib}Gi"}},
        },
    }


def _template(ctx: BuildContext, node_selector: dict[str, str] | None = None) -> dict:
    """Pod template: owner labels (the operator copies them to pods) and the kind's priority
    (Kueue queues every pod of the namespace, the GPU-less ones at this priority), and a
    dedicated tenant's nodes only."""
    pod: dict[str, Any] = {}
    selector = node_selector if node_selector is not None else ctx.gpu_node_selector(None)
    if selector:
        pod["nodeSelector"] = selector
    if tolerations := ctx.gpu_tolerations():
        pod["tolerations"] = tolerations
    return {"metadata": {"labels": {**ctx.labels, **ctx.priority_labels}}, "spec": pod}


def _key_refs(names: Names) -> dict[str, Any]:
    # jwtKeyRef, not the deprecated jwtHs256KeyRef: the same HS256 key either way.
    return {
        "slurmKeyRef": {"name": names.slurm_key, "key": SLURM_KEY},
        "jwtKeyRef": {"name": names.jwt_key, "key": JWT_KEY},
    }


def _controller(spec: Mapping[str, Any], ctx: BuildContext, names: Names) -> Manifest:
    controller: dict[str, Any] = {
        **_key_refs(names),
        "configFileRefs": [{"name": names.gres}],
        "persistence": {"enabled": True, "existingClaim": names.controller_state},
        "slurmctld": _container("slurmctld", *CONTROLLER_CONTAINERS["slurmctld"]),
        "reconfigure": _container("slurmctld", *CONTROLLER_CONTAINERS["reconfigure"]),
        "logfile": _container("sidecar", *CONTROLLER_CONTAINERS["logfile"]),
        "template": _template(ctx),
    }
    if spec.get("accounting"):
        controller["accountingRef"] = {"name": names.cluster}
    return {
        "apiVersion": SLINKY,
        "kind": "Controller",
        "metadata": ctx.metadata(names.cluster),
        "spec": controller,
    }


def _nodeset(spec: Mapping[str, Any], ctx: BuildContext, names: Names) -> Manifest:
    gpu = resource_classes.parse(spec["gpu"])
    per_worker = int(spec["gpus_per_worker"])
    slurmd = {
        "image": IMAGES["slurmd"],
        "imagePullPolicy": "IfNotPresent",
        "resources": _resources(
            1000 * int(spec["cpu_per_worker"]),
            1024 * int(spec["memory_gib_per_worker"]),
            **{gpu.kubernetes_resource: per_worker},
        ),
    }
    template = _template(ctx, ctx.gpu_node_selector(gpu.gpu_model.product_label))
    # Each worker pod the operator makes is admitted by Kueue (its pod integration) through
    # the tenant's queue, named here (the other pods get it from Kueue's defaulting).
    template["metadata"]["labels"] |= ctx.admission_labels
    # Slurm names the nodes gpu-0, gpu-1, … and their partition `gpu` after this prefix.
    template["spec"]["hostname"] = f"{PARTITION}-"
    return {
        "apiVersion": SLINKY,
        "kind": "NodeSet",
        "metadata": ctx.metadata(names.workers),
        "spec": {
            "controllerRef": {"name": names.cluster},
            "replicas": int(spec["workers"]),
            "scalingMode": "StatefulSet",
            # One partition of these workers, the default one, so `srun` needs no `-p`.
            "partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"},
            # slurmd --conf: the GPUs this node offers (gres.conf autodetects which).
            "extraConf": f"Gres=gpu:{per_worker}",
            "slurmd": slurmd,
            "logfile": _container("sidecar", *WORKER_SIDECARS["logfile"]),
            "template": template,
        },
    }


def _loginset(spec: Mapping[str, Any], ctx: BuildContext, names: Names) -> Manifest:
    loginset: dict[str, Any] = {
        "controllerRef": {"name": names.cluster},
        "replicas": 1,
        "sssdConfRef": {"name": names.sssd, "key": SSSD_CONF_KEY},
        "login": _container("login", *LOGIN_CONTAINERS["login"]),
        "initconf": _container("sidecar", *INIT_CONTAINER),
        "service": _login_service(ctx),
        "template": _template(ctx),
    }
    if spec.get("ssh_public_key"):
        loginset["rootSshAuthorizedKeys"] = spec["ssh_public_key"] + "\n"
    return {
        "apiVersion": SLINKY,
        "kind": "LoginSet",
        "metadata": ctx.metadata(names.login),
        "spec": loginset,
    }


def _login_service(ctx: BuildContext) -> dict[str, Any]:
    """The login node's Service (the operator names it after the LoginSet): with
    SSH_LOAD_BALANCER, on an address of the fleet's pool, which the tenant's NetworkPolicy
    admits on port 22 (`kinds.ssh_access`); else in the namespace only. The owner labels let the
    portal read its address back."""
    if not ctx.access.ssh_load_balancer:
        return {"spec": {"type": "ClusterIP"}}
    return {"metadata": {"labels": ctx.labels}, "spec": ssh_access.service_spec(ctx.access)}


def _restapi(ctx: BuildContext, names: Names) -> Manifest:
    return {
        "apiVersion": SLINKY,
        "kind": "RestApi",
        "metadata": ctx.metadata(names.cluster),
        "spec": {
            "controllerRef": {"name": names.cluster},
            "replicas": 1,
            "slurmrestd": _container("slurmrestd", *RESTAPI_CONTAINERS["slurmrestd"]),
            "template": _template(ctx),
        },
    }


def _accounting(ctx: BuildContext, names: Names) -> Manifest:
    return {
        "apiVersion": SLINKY,
        "kind": "Accounting",
        "metadata": ctx.metadata(names.cluster),
        "spec": {
            **_key_refs(names),
            "storageConfig": {
                "host": names.mariadb,
                "port": DATABASE_PORT,
                "database": DATABASE,
                "username": DATABASE_USER,
                "passwordKeyRef": {"name": names.db_password, "key": DB_PASSWORD_KEY},
            },
            "slurmdbd": _container("slurmdbd", *ACCOUNTING_CONTAINERS["slurmdbd"]),
            "template": _template(ctx),
        },
    }


def _database(ctx: BuildContext, names: Names) -> list[Manifest]:
    # Stable and unique in the namespace: a StatefulSet's selector is immutable.
    selector = {
        LABEL_WORKLOAD_ID: ctx.labels[LABEL_WORKLOAD_ID],
        "app.kubernetes.io/name": "mariadb",
    }
    password = {"secretKeyRef": {"name": names.db_password, "key": DB_PASSWORD_KEY}}
    mariadb = {
        "name": "mariadb",
        "image": IMAGES["mariadb"],
        # slurmdbd's own advice for InnoDB: long lock waits during rollups.
        "args": ["--innodb-lock-wait-timeout=900"],
        "env": [
            {"name": "MARIADB_DATABASE", "value": DATABASE},
            {"name": "MARIADB_USER", "value": DATABASE_USER},
            {"name": "MARIADB_PASSWORD", "valueFrom": password},
            {"name": "MARIADB_RANDOM_ROOT_PASSWORD", "value": "1"},
        ],
        "ports": [{"name": "mysql", "containerPort": DATABASE_PORT}],
        "readinessProbe": {
            "exec": {"command": ["healthcheck.sh", "--connect", "--innodb_initialized"]},
            "periodSeconds": 10,
        },
        "resources": _resources(*ACCOUNTING_CONTAINERS["mariadb"]),
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/mysql"}],
    }
    template = _template(ctx)
    template["metadata"]["labels"] |= selector
    template["spec"]["containers"] = [mariadb]
    template["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": names.database_data}}
    ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": ctx.metadata(names.mariadb),
            "spec": {
                "selector": dict(selector),
                "ports": [{"name": "mysql", "port": DATABASE_PORT, "targetPort": "mysql"}],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": ctx.metadata(names.mariadb),
            "spec": {
                "serviceName": names.mariadb,
                "replicas": 1,
                "selector": {"matchLabels": dict(selector)},
                "template": template,
            },
        },
    ]


def cel_errors(manifests: list[Manifest]) -> list[str]:
    """The CEL rules (`x-kubernetes-validations`) of the Slinky CRDs that jsonschema does not
    evaluate, and the references the CRDs only default: key refs on Controller and Accounting,
    a `controllerRef` naming the Controller built alongside, the LoginSet's `sssdConfRef`."""
    problems = []
    controllers = {m["metadata"]["name"] for m in manifests if m.get("kind") == "Controller"}
    for manifest in manifests:
        kind, spec = manifest.get("kind"), manifest.get("spec") or {}
        where = f"{kind}/{(manifest.get('metadata') or {}).get('name')}"
        if manifest.get("apiVersion") != SLINKY:
            continue
        if kind in ("Controller", "Accounting"):
            if spec.get("external", False):
                if "externalConfig" not in spec:
                    problems.append(f"{where}: externalConfig must be set when external is true")
                continue
            if not (spec.get("slurmKeyRef") or {}).get("name"):
                problems.append(f"{where}: slurmKeyRef must be set when external is false")
            jwt = spec.get("jwtKeyRef") or spec.get("jwtHs256KeyRef") or {}
            if not jwt.get("name"):
                problems.append(
                    f"{where}: jwtKeyRef or jwtHs256KeyRef must be set when external is false"
                )
        names_controller = (spec.get("controllerRef") or {}).get("name") in controllers
        if kind in ("NodeSet", "LoginSet", "RestApi") and not names_controller:
            problems.append(f"{where}: controllerRef must name the Controller")
        if kind == "LoginSet" and not (spec.get("sssdConfRef") or {}).get("name"):
            problems.append(f"{where}: sssdConfRef must name the sssd.conf Secret")
        if kind == "NodeSet" and (spec.get("updateStrategy") or {}).get("type") == (
            "ScheduledUpdate"
        ):
            problems.append(f"{where}: a ScheduledUpdate needs startTime and duration")
    return problems
