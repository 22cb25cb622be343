"""The Slurm kind: what it accepts, the Slinky objects it builds (checked against the upstream
CRDs, their CEL rules and field by field), the key Secrets kept out of the spec, what it
holds, how it reads the operator's objects back, scaling and how a person logs in."""

import base64
import contextlib
import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tenants.enforcement.manifests import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from tenants.workloads.kinds import slurm
from tenants.workloads.kinds.base import (
    LABEL_WORKLOAD_ID,
    RESERVED_FOR_KEY,
    BuildContext,
    GpuOffer,
    LaunchContext,
    SpecError,
)
from tenants.workloads.kinds.schemas import manifest_errors
from tenants.workloads.selectors import admission_labels, priority_labels
from tests.tenants.kube_schemas import schema_errors

from . import openssh_keys

H100 = "gpu:nvidia-h100-80gb"
A100_MIG = "mig:nvidia-a100-80gb:1g.10gb"
L40S_HAMI = "hami:nvidia-l40s:memory-gib"
OFFERS = (
    GpuOffer(H100, "NVIDIA H100 80GB HBM3 GPUs", 8),
    GpuOffer(A100_MIG, "NVIDIA A100 SXM4 80GB MIG 1g.10gb", 56),
    GpuOffer(L40S_HAMI, "NVIDIA L40S HAMi GPU memory (GiB)", 192),
)
SLURM_KEY = bytes(range(256)) * 4
JWT_KEY = b"\x07" * 32 + b"jwt-hs256-signing-key"
DB_PASSWORD = "Zq8v-3kP_w9TnL2xYc"
SLINKY = "slinky.slurm.net/v1beta1"


def launch(isolation="shared", quota=None):
    quota = {H100: 64, A100_MIG: 28, L40S_HAMI: 96} if quota is None else quota
    return LaunchContext(isolation=isolation, quota=quota, gpu_offers=OFFERS)


def build(isolation="shared", name="train"):
    return BuildContext(
        workload_id=7,
        name=name,
        kind="slurm",
        tenant_slug="acme",
        namespace="tenant-acme",
        isolation=isolation,
    )


def asked(**changes):
    spec = {
        "workers": 4,
        "gpu": H100,
        "gpus_per_worker": 8,
        "cpu_per_worker": 64,
        "memory_gib_per_worker": 512,
        "ssh_public_key": openssh_keys.ed25519_public(),
    }
    spec.update(changes)
    return {k: v for k, v in spec.items() if v is not None}


def clean(isolation="shared", **changes):
    return slurm.KIND.validate(asked(**changes), launch(isolation))


def refused(spec, ctx=None):
    with pytest.raises(SpecError) as caught:
        slurm.KIND.validate(spec, ctx or launch())
    return caught.value.fields


def by_kind(manifests):
    found = {}
    for manifest in manifests:
        found.setdefault(manifest["kind"], []).append(manifest)
    return found


def one(manifests, kind, name=None):
    (found,) = [m for m in manifests if m["kind"] == kind and name in (None, m["metadata"]["name"])]
    return found


def everything(spec, isolation="shared"):
    ctx = build(isolation)
    return slurm.secret_manifests(ctx, SLURM_KEY, JWT_KEY, db_password=DB_PASSWORD) + (
        slurm.KIND.manifests(spec, ctx)
    )


# -- what it accepts ------------------------------------------------------------------------


def test_a_clean_spec():
    spec = clean(accounting="on", rest_api=True)

    assert spec == {
        "workers": 4,
        "gpu": H100,
        "gpus_per_worker": 8,
        "cpu_per_worker": 64,
        "memory_gib_per_worker": 512,
        "accounting": True,
        "rest_api": True,
        "ssh_public_key": openssh_keys.ed25519_public(),
    }
    assert slurm.KIND.validate(spec, launch()) == spec


def test_mig_workers_for_a_shared_tenant_and_zero_workers_to_start_with():
    spec = clean(gpu=A100_MIG, gpus_per_worker=7, workers="0", ssh_public_key=None)

    assert (spec["gpu"], spec["gpus_per_worker"], spec["workers"]) == (A100_MIG, 7, 0)
    assert spec["ssh_public_key"] == "" and spec["accounting"] is False


def test_more_gpus_per_worker_than_any_node_has_is_a_field_error():
    fields = refused(asked(gpus_per_worker=9))

    assert fields == {
        "gpus_per_worker": [
            "At most 8: no node of your pool has more NVIDIA H100 80GB HBM3 GPUs than that."
        ]
    }


@pytest.mark.parametrize("workers", [-1, "-3", -(10**40)])
def test_a_worker_count_below_zero_is_a_field_error(workers):
    assert refused(asked(workers=workers)) == {
        "workers": ["A worker count below zero: at least 0 workers."]
    }


def test_mig_for_a_dedicated_tenant_is_a_field_error():
    fields = refused(asked(gpu=A100_MIG, gpus_per_worker=1), launch("dedicated"))

    assert list(fields) == ["gpu"]
    assert "Dedicated tenants get whole GPUs only" in fields["gpu"][0]
    assert clean("dedicated")["gpu"] == H100


def test_hami_shares_are_refused_with_the_reason():
    assert "HAMi" in refused(asked(gpu=L40S_HAMI, gpus_per_worker=1))["gpu"][0]


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"workers": 257}, "workers", "At most 256"),
        ({"workers": None}, "workers", "Required"),
        ({"workers": 1.5}, "workers", "whole number"),
        ({"gpu": None}, "gpu", "Pick a GPU class"),
        ({"gpu": "gpu:nvidia-l40s"}, "gpu", "Your pool has no"),
        ({"gpu": "storage-gib"}, "gpu", "Not a GPU class"),
        ({"gpus_per_worker": 0}, "gpus_per_worker", "At least 1"),
        ({"cpu_per_worker": 257}, "cpu_per_worker", "At most 256"),
        ({"memory_gib_per_worker": 4097}, "memory_gib_per_worker", "At most 4,096"),
        ({"memory_gib_per_worker": None}, "memory_gib_per_worker", "Required"),
        ({"accounting": "sometimes"}, "accounting", "Yes or no"),
        ({"rest_api": 1}, "rest_api", "Yes or no"),
        ({"ssh_public_key": openssh_keys.rsa_public(1024)}, "ssh_public_key", "too weak"),
        ({"nodes": 4}, "nodes", "Unknown field"),
    ],
)
def test_bad_input_is_a_field_error(changes, field, says):
    fields = refused(asked(**changes))

    assert field in fields
    assert says in " ".join(fields[field])


def test_gpus_need_quota_of_that_class():
    assert "quota holds no" in refused(asked(), launch(quota={}))["gpu"][0]


JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
VALUES = JUNK | st.sampled_from([H100, A100_MIG, L40S_HAMI, "8", "-1", "true", "0"])


WEIRD = [
    "\ud800",
    "\x00",
    "\u202e" + openssh_keys.ed25519_public(),
    "ssh-ed25519\u2028AAAA",
    "\uff11\uff16",  # full-width digits
    "٣",  # an Arabic-Indic three
    "²",
    "--5",
    "9" * 5000,
    "x" * 100_000,
    10**400,
    -(10**400),
    float("inf"),
    b"bytes",
    {"nested": {"deep": [1, 2]}},
    ["a", {"b": None}],
]


@pytest.mark.parametrize("value", WEIRD, ids=range(len(WEIRD)))
@pytest.mark.parametrize("field", sorted(slurm.FIELDS))
def test_weird_values_in_any_field_only_ever_raise_spec_error(field, value):
    with contextlib.suppress(SpecError):
        slurm.KIND.validate(asked(**{field: value}), launch())


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(slurm.FIELDS)) | st.text(max_size=10), VALUES) | JUNK)
def test_junk_specs_only_ever_raise_spec_error(spec):
    try:
        clean_spec = slurm.KIND.validate(spec, launch())
    except SpecError:
        return
    assert all(manifest_errors(m) == [] for m in slurm.KIND.manifests(clean_spec, build()))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(slurm.FIELDS)) | st.text(max_size=10), VALUES))
def test_junk_scale_changes_only_ever_raise_spec_error(changes):
    with contextlib.suppress(SpecError):
        slurm.KIND.scale(clean(), changes, launch())


# -- the objects it builds --------------------------------------------------------------------


@pytest.mark.parametrize("isolation", ["shared", "dedicated"])
@pytest.mark.parametrize(("accounting", "rest_api"), [(False, False), (True, True)])
def test_every_object_validates_against_its_schema(isolation, accounting, rest_api):
    spec = clean(isolation, accounting=accounting, rest_api=rest_api)

    for manifest in everything(spec, isolation):
        if manifest["apiVersion"] == SLINKY:
            assert manifest_errors(manifest) == [], manifest["kind"]
        else:  # built-in kinds: Kubernetes' own schema, strict
            assert schema_errors(manifest) == [], manifest["kind"]
        assert manifest["metadata"]["namespace"] == "tenant-acme"
        assert manifest["metadata"]["labels"][LABEL_WORKLOAD_ID] == "7"
    assert slurm.cel_errors(everything(spec, isolation)) == []


def test_the_objects_in_apply_order():
    kinds = [
        (m["kind"], m["metadata"]["name"])
        for m in everything(clean(accounting=True, rest_api=True))
    ]

    assert kinds == [
        ("Secret", "train-slurm-key"),
        ("Secret", "train-jwt-key"),
        ("Secret", "train-db-password"),
        ("Secret", "train-sssd"),
        ("ConfigMap", "train-gres"),
        ("PersistentVolumeClaim", "train-controller-state"),
        ("PersistentVolumeClaim", "train-mariadb-data"),
        ("Service", "train-mariadb"),
        ("StatefulSet", "train-mariadb"),
        ("Accounting", "train"),
        ("Controller", "train"),
        ("NodeSet", "train-workers"),
        ("LoginSet", "train-login"),
        ("RestApi", "train"),
    ]
    minimal = [m["kind"] for m in slurm.KIND.manifests(clean(), build())]
    assert minimal == [
        "Secret",
        "ConfigMap",
        "PersistentVolumeClaim",
        "Controller",
        "NodeSet",
        "LoginSet",
    ]


def test_the_cel_rules_that_matter_hold():
    manifests = everything(clean(accounting=True, rest_api=True))
    secrets = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "Secret"}
    controller = one(manifests, "Controller")

    # Controller and Accounting: slurmKeyRef, and jwtKeyRef or jwtHs256KeyRef, unless external.
    for keyed in (controller, one(manifests, "Accounting")):
        assert not keyed["spec"].get("external", False)
        for field, key in (("slurmKeyRef", "slurm.key"), ("jwtKeyRef", "jwt.key")):
            ref = keyed["spec"][field]
            assert ref["key"] == key and key in secrets[ref["name"]]["data"]
    # NodeSet, LoginSet, RestApi: controllerRef names the Controller built alongside.
    for kind in ("NodeSet", "LoginSet", "RestApi"):
        assert one(manifests, kind)["spec"]["controllerRef"] == {
            "name": controller["metadata"]["name"]
        }
    # LoginSet: sssdConfRef names a Secret holding sssd.conf.
    sssd = one(manifests, "LoginSet")["spec"]["sssdConfRef"]
    assert sssd == {"name": "train-sssd", "key": "sssd.conf"}
    assert base64.b64decode(secrets["train-sssd"]["data"]["sssd.conf"]).startswith(b"[sssd]")
    assert controller["spec"]["accountingRef"] == {"name": "train"}


@pytest.mark.parametrize(
    ("kind", "breaks", "says"),
    [
        ("Controller", lambda s: s.pop("slurmKeyRef"), "slurmKeyRef must be set"),
        ("Controller", lambda s: s.pop("jwtKeyRef"), "jwtKeyRef or jwtHs256KeyRef"),
        ("Controller", lambda s: s.update(external=True), "externalConfig must be set"),
        ("NodeSet", lambda s: s.update(controllerRef={"name": ""}), "controllerRef"),
        ("LoginSet", lambda s: s.pop("sssdConfRef"), "sssdConfRef"),
        ("NodeSet", lambda s: s.update(updateStrategy={"type": "ScheduledUpdate"}), "Scheduled"),
    ],
)
def test_cel_errors_catches_what_jsonschema_lets_through(kind, breaks, says):
    manifests = slurm.KIND.manifests(clean(), build())
    breaks(one(manifests, kind)["spec"])

    (problem,) = slurm.cel_errors(manifests)
    assert says in problem


def test_the_gpu_workers_field_by_field():
    nodeset = one(slurm.KIND.manifests(clean(), build()), "NodeSet")["spec"]

    assert nodeset["replicas"] == 4 and nodeset["scalingMode"] == "StatefulSet"
    assert nodeset["slurmd"]["image"].startswith("ghcr.io/slinkyproject/slurmd:")
    amounts = {"cpu": "64000m", "memory": "524288Mi", "nvidia.com/gpu": "8"}
    assert nodeset["slurmd"]["resources"] == {"requests": amounts, "limits": amounts}
    assert nodeset["extraConf"] == "Gres=gpu:8"
    assert nodeset["partition"] == {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"}
    assert nodeset["template"]["spec"]["nodeSelector"] == {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"
    }
    assert nodeset["template"]["spec"]["hostname"] == "gpu-"
    assert nodeset["template"]["metadata"]["labels"][LABEL_WORKLOAD_ID] == "7"
    assert "tolerations" not in nodeset["template"]["spec"]


def test_the_gpu_workers_queue_in_the_tenants_local_queue_at_the_batch_priority():
    ctx = dataclasses.replace(build(), admission_labels=admission_labels("slurm"),
                              priority_labels=priority_labels("slurm"))
    manifests = slurm.KIND.manifests(clean(), ctx)
    workers = one(manifests, "NodeSet")["spec"]["template"]["metadata"]["labels"]
    assert workers[QUEUE_NAME_LABEL] == "default"
    assert workers[PRIORITY_CLASS_LABEL] == "portal-batch"
    assert workers[LABEL_WORKLOAD_ID] == "7"
    # The control plane (controller, login node, REST API, accounting and its database) holds
    # no GPU: Kueue's defaulting queues its pods, and they carry the same priority, so a
    # worker short of CPU cannot preempt them.
    others = {m["kind"]: m["spec"]["template"]["metadata"]["labels"] for m in manifests
              if m["kind"] != "NodeSet" and "template" in m.get("spec", {})}
    assert {"Controller", "LoginSet"} <= set(others)
    for kind, labels in others.items():
        assert QUEUE_NAME_LABEL not in labels, kind
        assert labels[PRIORITY_CLASS_LABEL] == "portal-batch", kind
    assert [manifest_errors(m) for m in manifests] == [[] for _ in manifests]


def test_mig_workers_ask_for_the_profiles_resource():
    spec = clean(gpu=A100_MIG, gpus_per_worker=7)
    slurmd = one(slurm.KIND.manifests(spec, build()), "NodeSet")["spec"]["slurmd"]

    assert slurmd["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == "7"
    assert "nvidia.com/gpu" not in slurmd["resources"]["limits"]


def test_a_dedicated_tenants_cluster_runs_on_its_reserved_nodes_only():
    manifests = slurm.KIND.manifests(
        clean("dedicated", accounting=True, rest_api=True), build("dedicated")
    )
    toleration = {
        "key": RESERVED_FOR_KEY,
        "operator": "Equal",
        "value": "acme",
        "effect": "NoSchedule",
    }

    templates = [
        m["spec"]["template"]["spec"] for m in manifests if "template" in m.get("spec", {})
    ]
    assert len(templates) == 6  # mariadb, accounting, controller, workers, login, rest api
    for pod in templates:
        assert pod["nodeSelector"][RESERVED_FOR_KEY] == "acme"
        assert pod["tolerations"] == [toleration]
    workers = one(manifests, "NodeSet")["spec"]["template"]["spec"]["nodeSelector"]
    assert workers == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", RESERVED_FOR_KEY: "acme"}


def test_the_login_node_takes_roots_key_and_stays_inside_the_namespace():
    loginset = one(slurm.KIND.manifests(clean(), build()), "LoginSet")["spec"]

    assert loginset["rootSshAuthorizedKeys"] == openssh_keys.ed25519_public() + "\n"
    assert loginset["service"] == {"spec": {"type": "ClusterIP"}}
    assert loginset["replicas"] == 1
    no_key = one(slurm.KIND.manifests(clean(ssh_public_key=None), build()), "LoginSet")
    assert "rootSshAuthorizedKeys" not in no_key["spec"]


def test_accounting_points_slurmdbd_at_the_clusters_own_mariadb():
    manifests = slurm.KIND.manifests(clean(accounting=True), build())
    storage = one(manifests, "Accounting")["spec"]["storageConfig"]
    database = one(manifests, "StatefulSet", "train-mariadb")["spec"]
    service = one(manifests, "Service", "train-mariadb")["spec"]

    assert storage == {
        "host": "train-mariadb",
        "port": 3306,
        "database": "slurm_acct_db",
        "username": "slurm",
        "passwordKeyRef": {"name": "train-db-password", "key": "password"},
    }
    (container,) = database["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["MARIADB_PASSWORD"]["valueFrom"] == {
        "secretKeyRef": {"name": "train-db-password", "key": "password"}
    }
    assert env["MARIADB_DATABASE"]["value"] == "slurm_acct_db"
    assert env["MARIADB_USER"]["value"] == "slurm"
    assert service["selector"] == database["selector"]["matchLabels"]
    assert set(service["selector"].items()) <= set(
        database["template"]["metadata"]["labels"].items()
    )
    assert database["template"]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "train-mariadb-data"}}
    ]
    claim = one(manifests, "PersistentVolumeClaim", "train-mariadb-data")
    assert claim["spec"]["resources"]["requests"] == {"storage": "10Gi"}


def test_the_controllers_state_lives_on_a_claim_the_portal_owns():
    # The operator's own claim template would carry none of the owner labels: deleting the
    # workload would leave it behind, still counted against the tenant's storage.
    manifests = slurm.KIND.manifests(clean(), build())

    persistence = one(manifests, "Controller")["spec"]["persistence"]
    assert persistence == {"enabled": True, "existingClaim": "train-controller-state"}
    claim = one(manifests, "PersistentVolumeClaim", "train-controller-state")
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "4Gi"}},
    }
    assert claim["metadata"]["labels"][LABEL_WORKLOAD_ID] == "7"


def test_gres_autodetection_is_configured_for_the_controller():
    manifests = slurm.KIND.manifests(clean(), build())

    gres = one(manifests, "ConfigMap", "train-gres")
    assert gres["data"] == {"gres.conf": "AutoDetect=nvidia\n"}
    assert one(manifests, "Controller")["spec"]["configFileRefs"] == [{"name": "train-gres"}]


def test_long_workload_names_keep_every_derived_name_within_63():
    long_name = "a-very-long-workload-name-that-someone-typed-on-a-bad-day-x"
    manifests = slurm.KIND.manifests(clean(), build(name=long_name))
    names = slurm.Names(build(name=long_name))

    assert len(names.cluster) == 40 and names.cluster != long_name[:40]
    derived = [m["metadata"]["name"] for m in manifests]
    derived += [f"{names.workers}-headless", f"{names.controller_app}-0", names.accounting_app]
    assert max(map(len, derived)) <= 63
    assert slurm.Names(build(name=long_name + "y")).cluster != names.cluster


def test_owned_kinds_cover_every_object_built_and_what_the_operator_makes():
    built = {
        (m["apiVersion"], m["kind"]) for m in everything(clean(accounting=True, rest_api=True))
    }

    assert built <= set(slurm.OWNED_KINDS)
    assert {("apps/v1", "Deployment"), ("v1", "Pod")} <= set(slurm.OWNED_KINDS)
    assert slurm.KEY == "slurm"


# -- key material -----------------------------------------------------------------------------


def test_the_keys_live_in_immutable_secrets_and_nowhere_else():
    ctx = build()
    secrets = slurm.secret_manifests(ctx, SLURM_KEY, JWT_KEY, db_password=DB_PASSWORD)

    data = {m["metadata"]["name"]: m["data"] for m in secrets}
    assert base64.b64decode(data["train-slurm-key"]["slurm.key"]) == SLURM_KEY
    assert base64.b64decode(data["train-jwt-key"]["jwt.key"]) == JWT_KEY
    assert base64.b64decode(data["train-db-password"]["password"]) == DB_PASSWORD.encode()
    assert all(m["immutable"] is True and m["type"] == "Opaque" for m in secrets)
    assert all(schema_errors(m) == [] for m in secrets)
    spec = clean(accounting=True)
    assert [("v1", "Secret", m["metadata"]["name"]) for m in secrets] == list(
        slurm.generated_secrets(spec, ctx)
    )
    shown = json.dumps([spec, slurm.KIND.manifests(spec, ctx)])
    for secret in secrets:
        for encoded in secret["data"].values():
            assert encoded not in shown
    assert DB_PASSWORD not in shown


def test_without_accounting_there_is_no_database_password():
    secrets = slurm.secret_manifests(build(), SLURM_KEY, JWT_KEY)

    assert [m["metadata"]["name"] for m in secrets] == ["train-slurm-key", "train-jwt-key"]
    assert len(slurm.generated_secrets(clean(), build())) == 2


@pytest.mark.parametrize(
    ("slurm_key", "jwt_key", "password"),
    [(b"short", JWT_KEY, None), (SLURM_KEY, "not bytes", None), (SLURM_KEY, JWT_KEY, "weak")],
)
def test_weak_key_material_is_a_programming_error(slurm_key, jwt_key, password):
    with pytest.raises(ValueError):
        slurm.secret_manifests(build(), slurm_key, jwt_key, db_password=password)


# -- demand -----------------------------------------------------------------------------------


def test_demand_is_the_workers_plus_a_small_fixed_control_plane():
    # Controller 1.2 vCPU / 2.25 GiB, login 0.5 / 1, each worker's log sidecar 0.1 / 0.125:
    # 2.1 vCPU and 3.75 GiB, rounded up.
    assert slurm.KIND.demand(clean()) == {
        H100: 32,
        "cpu": 4 * 64 + 3,
        "memory-gib": 4 * 512 + 4,
        "storage-gib": 4,
        "count:slurm": 1,
    }


def test_accounting_and_the_rest_api_add_their_pods_and_the_database_volume():
    # + slurmrestd 0.5 / 0.5, slurmdbd 0.5 / 1, mariadb 1 / 2: 4.1 vCPU, 7.25 GiB.
    assert slurm.KIND.demand(clean(accounting=True, rest_api=True)) == {
        H100: 32,
        "cpu": 4 * 64 + 5,
        "memory-gib": 4 * 512 + 8,
        "storage-gib": 14,
        "count:slurm": 1,
    }


def test_a_cluster_scaled_to_zero_holds_no_gpu():
    demand = slurm.KIND.demand(clean(workers=0))

    assert H100 not in demand
    assert (demand["cpu"], demand["memory-gib"]) == (2, 4)


def test_mig_demand_counts_partitions():
    assert slurm.KIND.demand(clean(gpu=A100_MIG, gpus_per_worker=7, workers=2))[A100_MIG] == 14


# -- status -----------------------------------------------------------------------------------

CONTROLLER = (SLINKY, "Controller", "train")
NODESET = (SLINKY, "NodeSet", "train-workers")
LOGINSET = (SLINKY, "LoginSet", "train-login")
CONTROLLER_STS = ("apps/v1", "StatefulSet", "train-controller")
LOGIN_DEPLOYMENT = ("apps/v1", "Deployment", "train-login")
UNSCHEDULABLE = (
    "0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/12 nodes are available: 12 No preemption victims found "
    "for incoming pod."
)


def _cr(key, generation=1, **status):
    manifests = slurm.KIND.manifests(clean(accounting=True, rest_api=True), build())
    manifest = one(manifests, key[1], key[2])
    manifest["metadata"] |= {"generation": generation, "uid": f"uid-{key[2]}"}
    if status:
        manifest["status"] = status
        assert manifest_errors(manifest) == []  # real-shaped: the CRD's status schema holds
    return manifest


def nodeset(ready, replicas=4, generation=1, observed=1, down=0):
    return _cr(
        NODESET,
        generation,
        replicas=replicas,
        readyReplicas=ready,
        availableReplicas=ready,
        updatedReplicas=replicas,
        unavailableReplicas=replicas - ready,
        desired=replicas,
        nodeSetHash="6b9c8f7d5",
        selector="app.kubernetes.io/instance=train-workers,app.kubernetes.io/name=slurmd",
        observedGeneration=observed,
        slurmIdle=ready - down,
        slurmAllocated=0,
        slurmDown=down,
        slurmDrain=0,
    )


def app(key, ready, **status):
    return {
        "apiVersion": key[0],
        "kind": key[1],
        "metadata": {
            "name": key[2],
            "namespace": "tenant-acme",
            "labels": build().labels,
            "ownerReferences": [{"kind": "Controller", "name": "train", "controller": True}],
        },
        "status": {"replicas": 1, "readyReplicas": ready, **status},
    }


def worker_pod(ordinal, *, unschedulable=False, waiting=None, queued=False):
    status = {"phase": "Pending", "conditions": []}
    if queued:  # Kueue's admission gate still on: the scheduler has not seen it
        status["conditions"].append({
            "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "lastTransitionTime": "2026-11-20T10:00:00Z",
        })
    if unschedulable:
        status["conditions"].append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": UNSCHEDULABLE,
                "lastTransitionTime": "2026-11-20T10:00:00Z",
            }
        )
    if waiting:
        status |= {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "slurmd",
                    "ready": False,
                    "restartCount": 5,
                    "state": {
                        "waiting": {"reason": waiting, "message": "back-off 5m0s restarting"}
                    },
                }
            ],
        }
    labels = build().labels | {
        "app.kubernetes.io/instance": "train-workers",
        "app.kubernetes.io/name": "slurmd",
    }
    return ("v1", "Pod", f"train-workers-{ordinal}"), {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"train-workers-{ordinal}", "labels": labels},
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]} if queued else {},
        "status": status,
    }


def cluster(workers_ready=4, extra=None):
    objects = {
        CONTROLLER: _cr(CONTROLLER),
        NODESET: nodeset(workers_ready),
        LOGINSET: _cr(LOGINSET, replicas=1, selector="app.kubernetes.io/name=login"),
        CONTROLLER_STS: app(CONTROLLER_STS, 1),
        LOGIN_DEPLOYMENT: app(LOGIN_DEPLOYMENT, 1),
    }
    objects.update(extra or {})
    return objects


def observe(objects, spec=None):
    return slurm.KIND.observe(objects, spec or clean(), build())


def test_nothing_in_the_cluster_is_absent():
    assert observe({}).state == "absent"


def test_a_cluster_with_controller_login_and_every_worker_ready_is_ready():
    seen = observe(cluster())

    assert seen.state == "ready"
    assert seen.details["workers_ready"] == 4 and seen.details["controller_ready"]
    assert seen.details["slurm_nodes"] == {"idle": 4, "allocated": 0, "down": 0, "drain": 0}


def test_a_cluster_just_applied_is_progressing():
    objects = {CONTROLLER: _cr(CONTROLLER), NODESET: _cr(NODESET), LOGINSET: _cr(LOGINSET)}

    seen = observe(objects)

    assert (seen.state, seen.reason) == ("progressing", "Starting")
    assert seen.message == "Waiting for: controller, login."


def test_workers_still_starting_is_progressing():
    seen = observe(cluster(workers_ready=1, extra=dict([worker_pod(1), worker_pod(2)])))

    assert (seen.state, seen.message) == ("progressing", "1 of 4 workers ready.")


def test_workers_kueue_holds_in_the_queue_say_so_and_are_no_fault():
    pods = dict([worker_pod(1), *(worker_pod(i, queued=True) for i in (2, 3))])

    seen = observe(cluster(workers_ready=1, extra=pods))

    assert (seen.state, seen.reason) == ("progressing", "Queued")
    assert seen.message.startswith("2 workers waiting in the tenant's queue: Kueue admits them")
    assert seen.details["workers_queued"] == 2


def test_workers_no_node_has_room_for_wait_degraded_in_the_schedulers_words():
    pods = dict(worker_pod(i, unschedulable=True) for i in range(4))

    seen = observe(cluster(workers_ready=0, extra=pods))

    assert (seen.state, seen.reason) == ("degraded", "Unschedulable")
    # The scheduler's words, its resource names as people read them.
    assert seen.message == UNSCHEDULABLE.replace("nvidia.com/gpu", "GPUs")


def test_some_workers_that_cannot_run_degrade_the_cluster():
    seen = observe(
        cluster(workers_ready=3, extra=dict([worker_pod(3, waiting="CrashLoopBackOff")]))
    )

    assert (seen.state, seen.reason) == ("degraded", "CrashLoopBackOff")
    assert seen.details["workers_ready"] == 3


def test_a_controller_that_cannot_pull_its_image_has_failed():
    controller_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-controller-0",
            "labels": build().labels | {"app.kubernetes.io/instance": "train"},
        },
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "slurmctld",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "waiting": {
                            "reason": "ImagePullBackOff",
                            "message": 'Back-off pulling image "ghcr.io/…"',
                        }
                    },
                }
            ],
        },
    }

    seen = observe(
        cluster(
            extra={
                CONTROLLER_STS: app(CONTROLLER_STS, 0),
                ("v1", "Pod", "train-controller-0"): controller_pod,
            }
        )
    )

    assert (seen.state, seen.reason) == ("failed", "ImagePullBackOff")


def test_a_login_deployment_past_its_deadline_has_failed():
    stuck = app(
        LOGIN_DEPLOYMENT,
        0,
        conditions=[
            {
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": 'ReplicaSet "train-login-5f7d" has timed out progressing.',
                "lastTransitionTime": "2026-11-20T10:10:00Z",
            }
        ],
    )

    seen = observe(cluster(extra={LOGIN_DEPLOYMENT: stuck}))

    assert (seen.state, seen.reason) == ("failed", "ProgressDeadlineExceeded")


def test_scaling_is_progressing_until_the_nodeset_settles():
    assert observe(cluster(extra={NODESET: nodeset(4, generation=3, observed=2)})).state == (
        "progressing"
    )
    seen = observe(
        cluster(extra={NODESET: nodeset(4, replicas=4)}),
        slurm.KIND.scale(clean(), {"workers": 2}, launch()),
    )
    assert (seen.state, seen.reason) == ("progressing", "Scaling")
    assert (
        observe(cluster(extra={NODESET: nodeset(2, replicas=2)}), clean(workers=2)).state == "ready"
    )


def test_workers_slurm_marks_down_degrade_the_cluster():
    seen = observe(cluster(extra={NODESET: nodeset(4, down=1)}))

    assert (seen.state, seen.reason) == ("degraded", "SlurmNodesDown")
    assert seen.message == "1 of 4 workers are DOWN in Slurm."


def test_accounting_waits_for_its_database():
    accounting = (SLINKY, "Accounting", "train")
    slurmdbd = ("apps/v1", "StatefulSet", "train-accounting")
    database = ("apps/v1", "StatefulSet", "train-mariadb")
    objects = cluster(extra={accounting: _cr(accounting), slurmdbd: app(slurmdbd, 1)})

    seen = observe(objects | {database: app(database, 0)}, clean(accounting=True))

    assert (seen.state, seen.message) == ("progressing", "Waiting for: database.")
    assert observe(objects | {database: app(database, 1)}, clean(accounting=True)).state == (
        "ready"
    )
    assert observe(objects, clean(accounting=True, rest_api=True)).message == (
        "Waiting for: rest api, database."
    )


def test_a_cluster_scaled_to_zero_workers_is_ready():
    objects = cluster(extra={NODESET: nodeset(0, replicas=0)})

    assert observe(objects, clean(workers=0)).state == "ready"


# -- scale ------------------------------------------------------------------------------------


def test_scale_changes_the_worker_count_only():
    assert slurm.KIND.scale(clean(), {"workers": "16"}, launch()) == clean() | {"workers": 16}
    assert slurm.KIND.scale(clean(), {"workers": 0}, launch())["workers"] == 0
    assert (
        one(slurm.KIND.manifests(clean(workers=16), build()), "NodeSet")["spec"]["replicas"] == 16
    )


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"workers": -1}, "workers", "below zero"),
        ({"workers": 1000}, "workers", "At most 256"),
        ({}, "workers", "Required"),
        ({"workers": 2, "gpus_per_worker": 4}, "gpus_per_worker", "Cannot be changed"),
        ({"workers": 2, "colour": "blue"}, "colour", "Unknown field"),
    ],
)
def test_scale_refuses(changes, field, says):
    with pytest.raises(SpecError) as caught:
        slurm.KIND.scale(clean(), changes, launch())

    assert says in " ".join(caught.value.fields[field])


# -- connection -------------------------------------------------------------------------------


def test_connection_gives_the_login_node_ssh_and_a_first_job():
    reached = slurm.KIND.connection(cluster(), clean(rest_api=True), build())
    items, commands = dict(reached.items), dict(reached.commands)

    assert items["Login node"] == "train-login.tenant-acme.svc port 22"
    assert items["Partition"] == "gpu"
    assert items["Slurm REST API"] == "http://train-restapi.tenant-acme.svc:6820"
    assert commands["SSH from a pod of your namespace or vCluster"] == (
        "ssh root@train-login.tenant-acme.svc"
    )
    assert (
        "kubectl -n tenant-acme port-forward svc/train-login 2222:22"
        in (commands["SSH from your machine through the Kubernetes API"])
    )
    assert commands["Run a job in the batch queue"] == "sbatch --gres=gpu:8 --wrap 'nvidia-smi'"
    assert commands["Run a step interactively"] == "srun --gres=gpu:8 nvidia-smi"
    assert any("scontrol token" in note for note in reached.notes)


def test_without_a_key_the_way_in_is_kubectl_exec():
    commands = dict(slurm.KIND.connection(cluster(), clean(ssh_public_key=None), build()).commands)

    assert commands["A shell on the login node"] == (
        "kubectl -n tenant-acme exec -it deploy/train-login -- bash"
    )
