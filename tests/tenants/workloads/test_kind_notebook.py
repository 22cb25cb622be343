"""The notebook kind: what it accepts (images, sizes, GPUs, the person's home volume), what it
holds, the objects it builds (checked against Kubernetes' and the vendored CRD schemas and
field by field: the home PVC, the StatefulSet, its Service, the OIDC SecurityPolicy and the
HTTPRoute), how it reads the cluster back, and how a person powers, resizes and opens it."""

import dataclasses
import re

import pytest

from inventory.resource_classes import COUNT_LABELS, COUNT_UNITS, WORKLOAD_KINDS
from tenants.enforcement.manifests import (
    COUNT_RESOURCES,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    Grant,
    TenantSpec,
    resource_quota_hard,
)
from tenants.workloads.kinds import notebook
from tenants.workloads.kinds.base import (
    KUEUE_ADMISSION_GATE,
    LABEL_KIND,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    LABEL_WORKLOAD_ID,
    MANAGED_BY,
    QUEUED_REASON,
    RESERVED_FOR_KEY,
    BuildContext,
    Exposure,
    GpuOffer,
    LaunchContext,
    OidcGate,
    SpecError,
)
from tenants.workloads.kinds.schemas import manifest_errors
from tenants.workloads.models import STOPPED_REASON
from tenants.workloads.registry import CHOICES, KINDS
from tenants.workloads.selectors import admission_labels, priority_labels
from tests.tenants.kube_schemas import schema_errors

KIND = notebook.KIND
H100 = "gpu:nvidia-h100-80gb"
MIG = "mig:nvidia-a100-80gb:1g.10gb"
HAMI = "hami:nvidia-l40s"
HAMI_MEMORY, HAMI_CORES = "hami:nvidia-l40s:memory-gib", "hami:nvidia-l40s:cores"
OFFERS = (
    GpuOffer(H100, "NVIDIA H100 80GB HBM3 GPUs", 8),
    GpuOffer(MIG, "NVIDIA A100 SXM4 80GB MIG 1g.10gb", 7),
    GpuOffer(HAMI_MEMORY, "NVIDIA L40S HAMi GPU memory (GiB)", 44),
    GpuOffer(HAMI_CORES, "NVIDIA L40S HAMi GPU compute (% of a GPU)", 100),
)
QUOTA = {H100: 16, MIG: 14, HAMI_MEMORY: 96, HAMI_CORES: 200, "cpu": 256, "memory-gib": 2048}
TORCH = "quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10"
IMAGES = {
    "pytorch": {"label": "PyTorch (JupyterLab)", "image": TORCH, "interface": "jupyterlab"},
    "vscode": {"label": "VS Code", "image": "docker.io/codercom/code-server:4.96.4",
               "interface": "code-server"},
    "broken": {"label": "Broken", "image": "pytorch-notebook", "interface": "jupyterlab"},
}
CATALOG = {"notebook_images": IMAGES, "notebook_home_gib": 20,
           "notebook_home_access_mode": "ReadWriteMany", "notebook_home_storage_class": "cephfs"}
ISSUER = "https://keycloak.example.org/realms/ai-factory"
GATE = OidcGate(issuer=ISSUER, client_id="notebooks", client_secret_name="portal-notebook-oidc",
                jwks_uri=f"{ISSUER}/protocol/openid-connect/certs",
                allowed_groups=("/tenants/nova/owners", "/tenants/nova/members"))
EXPOSURE = Exposure(gateway_namespace="ingress-gateway", gateway_name="fleet", listener="https",
                    domain="notebooks.example.org", oidc=GATE)


def launch(isolation="shared", person="alice", **catalog):
    return LaunchContext(isolation=isolation, quota=QUOTA, gpu_offers=OFFERS,
                         catalog={**CATALOG, **catalog}, person=person)


def build(isolation="shared", exposure=None, name="lab", **changes):
    return BuildContext(workload_id=42, name=name, kind="notebook", tenant_slug="nova",
                        namespace="tenant-nova", isolation=isolation, exposure=exposure,
                        admission_labels=admission_labels("notebook"),
                        shares_admission_labels=admission_labels("notebook", queue="shares"),
                        priority_labels=priority_labels("notebook"), **changes)


def clean(ctx=None, **fields):
    spec = {"image": "pytorch", **fields}
    return KIND.validate({k: v for k, v in spec.items() if v is not None}, ctx or launch())


def refused(spec, ctx=None):
    with pytest.raises(SpecError) as caught:
        KIND.validate(spec, ctx or launch())
    return caught.value.fields


def objects_of(spec, ctx=None):
    return {m["kind"]: m for m in KIND.manifests(spec, ctx or build())}


def pod_template(spec, ctx=None):
    return objects_of(spec, ctx)["StatefulSet"]["spec"]["template"]


# -- the kind in the vocabulary and the registry ---------------------------------------------


def test_the_fifth_kind_in_the_vocabulary_and_the_registry():
    assert KIND.KEY == "notebook" and "notebook" in WORKLOAD_KINDS
    assert (COUNT_LABELS["notebook"], COUNT_UNITS["notebook"]) == ("Notebooks", "notebook")
    entry = KINDS["notebook"]
    assert (entry.label, entry.plural, entry.icon, entry.priority) == (
        "Notebook", "Notebooks", "journal-code", "interactive")
    assert entry.scalable == ("cpu", "memory_gib", "gpus", "gpu_memory_gib", "gpu_cores")
    # The order of the model's choices (migration 0021).
    assert CHOICES[-1] == ("notebook", "Notebook")
    # No ResourceQuota count: count/statefulsets.apps would count vClusters' StatefulSets too.
    assert "notebook" not in COUNT_RESOURCES
    hard = resource_quota_hard(TenantSpec(slug="nova", isolation="shared", grants=(
        Grant("count:notebook", 3), Grant("count:vm", 2))))
    assert hard["count/virtualmachines.kubevirt.io"] == "2"
    assert not [key for key in hard if "statefulset" in key or "notebook" in key]


def test_owned_kinds_are_what_it_builds_and_its_pod_but_not_the_home_volume():
    built = {(m["apiVersion"], m["kind"]) for m in KIND.manifests(clean(), build(
        exposure=EXPOSURE))}

    assert set(KIND.OWNED_KINDS) == built - {("v1", "PersistentVolumeClaim")} | {("v1", "Pod")}


# -- what it accepts ---------------------------------------------------------------------------


def test_a_catalog_image_resolves_to_its_reference_and_interface_with_the_persons_home():
    spec = clean()

    assert spec == {
        "image": "pytorch",
        "custom_image": "",
        "image_ref": TORCH,
        "image_label": "PyTorch (JupyterLab)",
        "interface": "jupyterlab",
        "cpu": 4,
        "memory_gib": 16,
        "gpu": "",
        "gpus": 0,
        "running": True,
        "home": "home-alice",
        "home_gib": 20,
        "home_access_mode": "ReadWriteMany",
        "home_storage_class": "cephfs",
    }
    # A stored spec validates again, unchanged, when no one launches it.
    assert KIND.validate(spec, launch(person="")) == spec


def test_the_home_is_the_launching_persons_and_never_typed():
    assert clean(ctx=launch(person="bob"))["home"] == "home-bob"
    # A person's home is theirs: giving one (or its size) is an unknown field at launch.
    for given in ({"home": "home-bob"}, {"home_gib": 500}, {"home_storage_class": "fast"}):
        fields = refused({"image": "pytorch", **given})
        assert list(fields) == ["__all__"], given
        assert "Unknown field(s)" in fields["__all__"][0]


@pytest.mark.parametrize("person", [
    "Alice.Smith@example.org", "1bob", "x" * 80, "ünïcode", "a--b-", "root",
])
def test_any_username_becomes_a_home_volume_name_that_is_one_dns_label(person):
    home = notebook.home_claim(person)

    assert re.fullmatch(r"home-[a-z0-9]([-a-z0-9]*[a-z0-9])?", home) and len(home) <= 63
    assert notebook.home_claim(person) == home  # stable
    assert clean(ctx=launch(person=person))["home"] == home


def test_two_long_usernames_sharing_a_start_get_two_homes():
    assert notebook.home_claim("a" * 70 + "1") != notebook.home_claim("a" * 70 + "2")


def test_without_a_person_a_spec_keeps_its_home_or_has_none():
    stored = clean(ctx=launch(person="bob"))
    kept = KIND.validate(stored, launch(person="", notebook_home_gib=99))

    assert (kept["home"], kept["home_gib"]) == ("home-bob", 20)
    # A quote: nobody launches it, it has no home yet; it still holds the home's size.
    quoted = clean(ctx=launch(person=""))
    assert quoted["home"] == "" and quoted["home_gib"] == 20
    with pytest.raises(SpecError) as caught:
        KIND.manifests(quoted, build())
    assert list(caught.value.fields) == ["home"]
    assert list(refused({**stored, "home": "somebody-else"}, launch(person=""))) == ["home"]


def test_the_catalog_sizes_the_home_and_defaults_apply_without_it():
    spec = clean(ctx=LaunchContext(isolation="shared", quota=QUOTA, person="alice",
                                   catalog={"notebook_images": IMAGES}))

    assert (spec["home_gib"], spec["home_access_mode"], spec["home_storage_class"]) == (
        50, "ReadWriteOnce", "")
    assert "storageClassName" not in objects_of(spec)["PersistentVolumeClaim"]["spec"]
    fields = refused({"image": "pytorch"}, launch(notebook_home_access_mode="ReadOnlyMany",
                                                  notebook_home_gib=0))
    assert set(fields) == {"home_access_mode", "home_gib"}


def test_a_custom_image_only_where_the_tenant_may_run_its_own():
    own = {"custom_image": "registry.acme.io:5000/ml/lab:1.2", "interface": "code-server"}

    fields = refused(own)
    assert list(fields) == ["custom_image"]
    assert "listed images only" in fields["custom_image"][0]

    allowed = launch(notebook_custom_images=True)
    spec = KIND.validate(own, allowed)
    assert (spec["image"], spec["custom_image"], spec["image_ref"], spec["interface"]) == (
        "", "registry.acme.io:5000/ml/lab:1.2", "registry.acme.io:5000/ml/lab:1.2", "code-server")
    assert KIND.validate(spec, dataclasses.replace(allowed, person="")) == spec
    # Its interface says how it starts: required, one of the two.
    assert list(refused({"custom_image": own["custom_image"]}, allowed)) == ["interface"]
    assert list(refused({**own, "interface": "rstudio"}, allowed)) == ["interface"]
    # A registry is required, as for VM disks.
    assert list(refused({**own, "custom_image": "ubuntu:24.04"}, allowed)) == ["custom_image"]
    assert list(refused({**own, "image": "pytorch"}, allowed)) == ["custom_image"]


@pytest.mark.parametrize(("spec", "field", "words"), [
    ({}, "image", "Pick an image"),
    ({"image": "rstudio"}, "image", "Not one of the images offered (broken, pytorch, vscode)"),
    ({"image": "broken"}, "image", "misconfigured in the portal"),
    ({"image": "pytorch", "cpu": 0}, "cpu", "At least 1"),
    ({"image": "pytorch", "cpu": 65}, "cpu", "At most 64"),
    ({"image": "pytorch", "cpu": "four"}, "cpu", "A whole number"),
    ({"image": "pytorch", "memory_gib": 513}, "memory_gib", "At most 512"),
    ({"image": "pytorch", "memory_gib": 0}, "memory_gib", "At least 1"),
    ({"image": "pytorch", "running": "maybe"}, "running", "Yes or no"),
    ({"image": "pytorch", "gpu": "gpu:nvidia-h200"}, "gpu", "Not in your pool"),
    ({"image": "pytorch", "gpu": "cpu"}, "gpu", "A GPU class"),
    ({"image": "pytorch", "gpu": H100, "gpus": 9}, "gpus", "at most 8"),
    ({"image": "pytorch", "gpu": H100, "gpus": 0}, "gpus", "At least 1"),
    ({"image": "pytorch", "gpu": MIG, "gpus": 2}, "gpus", "One MIG instance per notebook"),
    ({"image": "pytorch", "gpu": HAMI, "gpus": 2, "gpu_memory_gib": 8, "gpu_cores": 20},
     "gpus", "One HAMi share per notebook"),
    ({"image": "pytorch", "gpu": HAMI, "gpu_cores": 20}, "gpu_memory_gib", "Required"),
    ({"image": "pytorch", "gpu": HAMI, "gpu_memory_gib": 45, "gpu_cores": 20},
     "gpu_memory_gib", "At most 44 GiB"),
    ({"image": "pytorch", "gpu": HAMI, "gpu_memory_gib": 8, "gpu_cores": 5},
     "gpu_cores", "At least 10 %"),
    ({"image": "pytorch", "gpu": H100, "gpu_cores": 20}, "gpu_cores", "Only for a HAMi share"),
    ({"image": "pytorch", "gpus": 2}, "gpus", "Pick a GPU first"),
    ({"image": "pytorch", "gpu_memory_gib": 8}, "gpu_memory_gib", "Only for a HAMi share"),
    ({"image": "pytorch", "colour": "blue"}, "__all__", "Unknown field(s): colour"),
])
def test_every_fields_errors(spec, field, words):
    fields = refused(spec)

    assert field in fields, fields
    assert words in " ".join(fields[field])


def test_every_bad_field_is_named_at_once():
    fields = refused({"image": "nope", "cpu": 0, "memory_gib": -1, "gpu": H100, "gpus": 99})

    assert set(fields) == {"image", "cpu", "memory_gib", "gpus"}


def test_partitions_are_refused_to_a_dedicated_tenant_and_not_built_for_one_any_more():
    dedicated = launch("dedicated")
    for gpu in (MIG, HAMI):
        assert "Dedicated tenants get whole GPUs only" in refused(
            {"image": "pytorch", "gpu": gpu, "gpu_memory_gib": 8, "gpu_cores": 20},
            dedicated)["gpu"][0]
    stored = clean(gpu=MIG)
    with pytest.raises(SpecError, match="Delete this notebook"):
        KIND.manifests(stored, build("dedicated"))


def test_no_quota_for_a_gpu_class_is_refused():
    ctx = dataclasses.replace(launch(), quota={**QUOTA, H100: 0})

    assert "No quota" in refused({"image": "pytorch", "gpu": H100}, ctx)["gpu"][0]


# -- what it holds -----------------------------------------------------------------------------


def test_demand_while_running_and_stopped_like_a_vm():
    whole = clean(gpu=H100, gpus=2, cpu=8, memory_gib=64)
    assert KIND.demand(whole) == {H100: 2, "cpu": 8, "memory-gib": 64, "storage-gib": 20,
                                  "count:notebook": 1}
    share = clean(gpu=HAMI, gpu_memory_gib=12, gpu_cores=25)
    assert KIND.demand(share) == {HAMI_MEMORY: 12, HAMI_CORES: 25, "cpu": 4, "memory-gib": 16,
                                  "storage-gib": 20, "count:notebook": 1}
    assert KIND.demand(clean(gpu=MIG))[MIG] == 1
    assert KIND.demand(clean()) == {"cpu": 4, "memory-gib": 16, "storage-gib": 20,
                                    "count:notebook": 1}
    # Stopped: only its home volume, as a stopped VM holds only its disk.
    assert KIND.demand(notebook.power(whole, "stop")) == {"storage-gib": 20, "count:notebook": 1}


# -- power and scale ---------------------------------------------------------------------------


def test_stop_and_start_change_only_running():
    spec = clean(gpu=H100)
    stopped = KIND.power(spec, "stop")

    assert stopped == {**spec, "running": False}
    assert notebook.power(stopped, "start") == spec
    assert objects_of(stopped)["StatefulSet"]["spec"]["replicas"] == 0
    assert objects_of(spec)["StatefulSet"]["spec"]["replicas"] == 1
    with pytest.raises(SpecError):
        notebook.power(spec, "restart")


def test_scaling_keeps_the_image_and_the_home():
    spec = clean(ctx=launch(person="bob"), gpu=H100, gpus=1)
    bigger = KIND.scale(spec, {"cpu": 16, "memory_gib": 128, "gpus": 4}, launch(person=""))

    assert bigger == {**spec, "cpu": 16, "memory_gib": 128, "gpus": 4}
    assert bigger["home"] == "home-bob"
    share = clean(gpu=HAMI, gpu_memory_gib=8, gpu_cores=20)
    assert KIND.scale(share, {"gpu_cores": 40}, launch(person=""))["gpu_cores"] == 40


@pytest.mark.parametrize(("spec", "changes", "field", "words"), [
    ({}, {"image": "vscode"}, "image", "Fixed for a notebook"),
    ({}, {"home": "home-eve"}, "home", "Fixed for a notebook"),
    ({}, {"colour": "blue"}, "colour", "Unknown field"),
    ({}, {"gpus": 2}, "gpus", "has no GPU"),
    ({"gpu": H100}, {"gpus": 9}, "gpus", "at most 8"),
    ({"gpu": H100}, {"cpu": 65}, "cpu", "At most 64"),
    ({"gpu": MIG}, {"gpus": 2}, "gpus", "One MIG instance"),
    ({"gpu": H100}, {"gpu_cores": 50}, "gpu_cores", "Only for a HAMi share"),
    ({"gpu": HAMI, "gpu_memory_gib": 8, "gpu_cores": 20}, {"gpu_memory_gib": 45},
     "gpu_memory_gib", "At most 44 GiB"),
])
def test_scale_refusals(spec, changes, field, words):
    with pytest.raises(SpecError) as caught:
        KIND.scale(clean(**spec), changes, launch(person=""))

    assert words in " ".join(caught.value.fields[field])


# -- the objects -------------------------------------------------------------------------------


@pytest.mark.parametrize("gpu", [None, H100, MIG, HAMI])
@pytest.mark.parametrize("exposure", [None, EXPOSURE])
def test_every_object_validates_against_its_schema(gpu, exposure):
    share = {"gpu_memory_gib": 8, "gpu_cores": 20} if gpu == HAMI else {}
    built = KIND.manifests(clean(gpu=gpu, **share), build(exposure=exposure))

    assert [m["kind"] for m in built] == (
        ["PersistentVolumeClaim", "StatefulSet", "Service"]
        + (["SecurityPolicy", "HTTPRoute"] if exposure else []))
    for manifest in built:
        assert manifest_errors(manifest) == [], manifest["kind"]  # vendored CRDs
        if manifest["apiVersion"] in ("v1", "apps/v1"):
            assert schema_errors(manifest) == [], manifest["kind"]  # Kubernetes' own, strict
        assert manifest["metadata"]["namespace"] == "tenant-nova"


def test_every_object_but_the_home_carries_the_owner_labels():
    built = KIND.manifests(clean(), build(exposure=EXPOSURE))
    owner = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_TENANT: "nova", LABEL_WORKLOAD_ID: "42",
             LABEL_KIND: "notebook"}

    for manifest in built[1:]:
        assert owner.items() <= manifest["metadata"]["labels"].items(), manifest["kind"]


def test_the_home_volume_outlives_the_notebook():
    home = objects_of(clean())["PersistentVolumeClaim"]

    assert home["metadata"] == {
        "name": "home-alice", "namespace": "tenant-nova",
        # Not the workload's id: never observed, pruned or deleted with the notebook.
        "labels": {LABEL_MANAGED_BY: MANAGED_BY, LABEL_TENANT: "nova",
                   "portal.ai-factory.io/home-of": "alice"},
    }
    assert home["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "cephfs",
                            "resources": {"requests": {"storage": "20Gi"}}}


@pytest.mark.parametrize(("image", "command", "args", "home", "health"), [
    # Docker Stacks: the image's entrypoint (tini, start.sh) runs what replaces its CMD.
    ("pytorch", None, ["start-notebook.py", "--IdentityProvider.token=", "--ServerApp.password=",
                       "--ServerApp.allow_remote_access=True", "--ServerApp.port=8888"],
     "/home/jovyan", "/api"),
    # code-server: its ENTRYPOINT's own `--bind-addr 0.0.0.0:8080 .` would come first.
    ("vscode", ["/usr/bin/entrypoint.sh"],
     ["--bind-addr=0.0.0.0:8888", "--auth=none", "--disable-telemetry", "/home/coder"],
     "/home/coder", "/healthz"),
])
def test_the_stateful_set_starts_the_interface_with_the_home_mounted(image, command, args, home,
                                                                    health):
    spec = clean(image=image)
    stateful_set = objects_of(spec)["StatefulSet"]
    pod = stateful_set["spec"]["template"]["spec"]
    (container,) = pod["containers"]

    assert stateful_set["metadata"]["name"] == "nb-lab"
    assert stateful_set["spec"]["serviceName"] == "nb-lab"
    assert stateful_set["spec"]["selector"] == {
        "matchLabels": {"portal.ai-factory.io/notebook": "nb-lab"}}
    assert (container["name"], container["image"], container["args"]) == (
        "notebook", IMAGES[image]["image"], args)
    assert container.get("command") == command
    assert container["ports"] == [{"name": "http", "containerPort": 8888, "protocol": "TCP"}]
    assert {"name": "home", "mountPath": home} in container["volumeMounts"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]  # noqa: S108
    assert {"name": "home", "persistentVolumeClaim": {"claimName": "home-alice"}} in pod["volumes"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]
    assert container["readinessProbe"]["httpGet"] == {"path": health, "port": "http"}
    assert pod["securityContext"]["fsGroup"] == 100
    assert pod["securityContext"]["runAsUser"] == 1000


def test_resources_whole_gpus_mig_and_a_hami_share():
    def resources(**fields):
        (container,) = pod_template(clean(**fields))["spec"]["containers"]
        assert container["resources"]["requests"] == container["resources"]["limits"]
        return container["resources"]["limits"]

    assert resources(gpu=H100, gpus=2, cpu=8, memory_gib=64) == {
        "cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}
    assert resources(gpu=MIG) == {"cpu": "4", "memory": "16Gi", "nvidia.com/mig-1g.10gb": "1"}
    assert resources(gpu=HAMI, gpu_memory_gib=8, gpu_cores=20) == {
        "cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1", "nvidia.com/gpumem": "8192",
        "nvidia.com/gpucores": "20"}
    assert resources() == {"cpu": "4", "memory": "16Gi"}


def test_a_cpu_notebook_sees_no_gpu():
    (container,) = pod_template(clean())["spec"]["containers"]

    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in container["env"]
    (gpu_container,) = pod_template(clean(gpu=H100))["spec"]["containers"]
    assert "env" not in gpu_container


def test_kueue_labels_whole_gpu_hami_and_no_gpu():
    whole = pod_template(clean(gpu=H100))["metadata"]
    mig = pod_template(clean(gpu=MIG))["metadata"]
    hami = pod_template(clean(gpu=HAMI, gpu_memory_gib=8, gpu_cores=20))["metadata"]
    cpu_only = pod_template(clean())["metadata"]

    for template in (whole, mig):
        assert template["labels"][QUEUE_NAME_LABEL] == "default"
        assert template["labels"][PRIORITY_CLASS_LABEL] == "portal-interactive"
    assert hami["labels"][QUEUE_NAME_LABEL] == "shares"
    assert hami["labels"][PRIORITY_CLASS_LABEL] == "portal-interactive"
    # No GPU: the priority alone (Kueue's LocalQueue defaulting queues the pod).
    assert QUEUE_NAME_LABEL not in cpu_only["labels"]
    assert cpu_only["labels"][PRIORITY_CLASS_LABEL] == "portal-interactive"
    for template in (whole, hami, cpu_only):
        assert template["labels"][LABEL_WORKLOAD_ID] == "42"
        assert template["labels"]["portal.ai-factory.io/notebook"] == "nb-lab"
    # The StatefulSet itself is no pod: Kueue's pod integration admits its pod.
    assert QUEUE_NAME_LABEL not in objects_of(clean(gpu=H100))["StatefulSet"]["metadata"][
        "labels"]


def test_placement_of_a_hami_share_whole_gpus_and_a_dedicated_tenants_notebook():
    hami = pod_template(clean(gpu=HAMI, gpu_memory_gib=8, gpu_cores=20))
    assert hami["spec"]["schedulerName"] == "hami-scheduler"
    assert hami["metadata"]["annotations"] == {"nvidia.com/use-gputype": "NVIDIA L40S"}
    assert hami["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}

    whole = pod_template(clean(gpu=H100))
    assert "schedulerName" not in whole["spec"] and "annotations" not in whole["metadata"]
    assert whole["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}

    reserved = {"key": RESERVED_FOR_KEY, "operator": "Equal", "value": "nova",
                "effect": "NoSchedule"}
    for spec in (clean(gpu=H100), clean()):
        dedicated = pod_template(spec, build("dedicated"))["spec"]
        assert dedicated["nodeSelector"][RESERVED_FOR_KEY] == "nova"
        assert dedicated["tolerations"] == [reserved]
    assert "nodeSelector" not in pod_template(clean())["spec"]


def test_the_service_sends_port_80_to_the_notebook():
    service = objects_of(clean())["Service"]

    assert service["metadata"]["name"] == "nb-lab"
    assert service["spec"] == {
        "selector": {"portal.ai-factory.io/notebook": "nb-lab"},
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"}],
    }


def test_a_long_name_stays_within_what_the_stateful_set_controller_allows():
    name = "a-very-long-notebook-name-" + "x" * 37  # 63 characters
    built = KIND.manifests(clean(), build(name=name, exposure=EXPOSURE))
    sts_name = built[1]["metadata"]["name"]

    assert sts_name.startswith("nb-a-very-long") and len(sts_name) <= 52
    assert {m["metadata"]["name"] for m in built[1:]} <= {sts_name, f"{sts_name}-sign-in"}
    host = built[-1]["spec"]["hostnames"][0]
    assert len(host.partition(".")[0]) <= 63
    assert re.fullmatch(re.escape(sts_name) + "-0", f"{sts_name}-0")
    assert re.fullmatch(KIND.gpu_pods({}, build(name=name)), f"{sts_name}-0")


def test_gpu_pods_is_the_stateful_sets_one_pod():
    pattern = re.compile(KIND.gpu_pods({}, build()))

    assert pattern.fullmatch("nb-lab-0")
    assert not any(pattern.fullmatch(n) for n in ("nb-lab-1", "nb-lab2-0", "lab-0", "nb-lab"))


# -- published through the gateway ---------------------------------------------------------


def test_the_route_and_its_sign_in_policy():
    built = KIND.manifests(clean(), build(exposure=EXPOSURE))
    policy, route = built[-2:]

    # The policy first: the route is never reachable without the sign-in.
    assert (policy["kind"], route["kind"]) == ("SecurityPolicy", "HTTPRoute")
    assert route["metadata"]["name"] == "nb-lab"
    assert route["spec"] == {
        "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                        "namespace": "ingress-gateway", "name": "fleet", "sectionName": "https"}],
        "hostnames": ["nb-lab-nova.notebooks.example.org"],
        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                   "backendRefs": [{"kind": "Service", "name": "nb-lab", "port": 80}]}],
    }
    assert policy["metadata"]["name"] == "nb-lab-sign-in"
    spec = policy["spec"]
    assert spec["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "nb-lab"}]
    assert spec["oidc"] == {
        "provider": {"issuer": ISSUER},
        "clientID": "notebooks",
        "clientSecret": {"name": "portal-notebook-oidc"},
        "redirectURL": "https://nb-lab-nova.notebooks.example.org/oauth2/callback",
        "logoutPath": "/oauth2/logout",
        "cookieNames": {"accessToken": "portal-nb-access", "idToken": "portal-nb-id"},
        "scopes": ["openid", "profile", "email"],
        # A cookie Envoy encrypted (its default) is no JWT the jwt filter could read.
        "disableTokenEncryption": True,
    }
    # The access token the OIDC filter keeps is checked as a JWT of the realm...
    assert spec["jwt"] == {"providers": [{
        "name": "keycloak", "issuer": ISSUER,
        "remoteJWKS": {"uri": f"{ISSUER}/protocol/openid-connect/certs"},
        "extractFrom": {"cookies": ["portal-nb-access"]},
    }]}
    # ...and admitted only when its groups name one of the tenant's: signed in is not enough.
    assert spec["authorization"] == {
        "defaultAction": "Deny",
        "rules": [{"name": "tenant-members", "action": "Allow", "principal": {"jwt": {
            "provider": "keycloak",
            "claims": [{"name": "groups", "valueType": "StringArray",
                        "values": ["/tenants/nova/owners", "/tenants/nova/members"]}],
        }}}],
    }
    # The CEL rules the schema check does not evaluate.
    assert "targetRef" not in spec and "clientIDRef" not in spec["oidc"]
    assert all("remoteJWKS" in p and "localJWKS" not in p for p in spec["jwt"]["providers"])


def test_an_exposure_without_sign_in_publishes_nothing():
    keys_only = dataclasses.replace(EXPOSURE, oidc=None)

    assert [m["kind"] for m in KIND.manifests(clean(), build(exposure=keys_only))] == [
        "PersistentVolumeClaim", "StatefulSet", "Service"]


def test_a_long_tenant_and_name_make_one_label_of_a_hostname():
    ctx = dataclasses.replace(build(name="n" * 50, exposure=EXPOSURE), tenant_slug="t" * 40)
    host = notebook.hostname(ctx)

    label, _, domain = host.partition(".")
    assert domain == "notebooks.example.org" and len(label) <= 63


# -- reading the cluster back ----------------------------------------------------------------

STS = ("apps/v1", "StatefulSet", "nb-lab")
POD = ("v1", "Pod", "nb-lab-0")


def stateful_set(ready=0):
    return {"metadata": {"name": "nb-lab"}, "spec": {"replicas": 1},
            "status": {"replicas": 1, "readyReplicas": ready}}


def pod(**status):
    return {"metadata": {"name": "nb-lab-0"}, "spec": {}, "status": status}


def observe(objects, spec=None, ctx=None):
    return KIND.observe(objects, spec or clean(), ctx or build())


def test_absent_before_its_stateful_set_exists():
    assert observe({}).state == "absent"


def test_stopped_with_no_pod_is_settled():
    seen = observe({STS: stateful_set()}, notebook.power(clean(), "stop"))

    assert (seen.state, seen.reason) == ("ready", STOPPED_REASON)
    assert seen.message == (
        "Stopped: its home volume is kept. Start it to pick up where you left off.")
    assert seen.details["power"] == "stopped"
    stopping = observe({STS: stateful_set(1), POD: pod(phase="Running")},
                       notebook.power(clean(), "stop"))
    assert stopping.state == "progressing"


def test_queued_by_kueue():
    gated = pod(phase="Pending")
    gated["spec"]["schedulingGates"] = [{"name": KUEUE_ADMISSION_GATE}]
    seen = observe({STS: stateful_set(), POD: gated}, clean(gpu=H100))

    assert (seen.state, seen.reason) == ("progressing", QUEUED_REASON)
    assert "waiting in the tenant's queue" in seen.message


def test_ready_with_its_url_interface_and_image():
    seen = observe({STS: stateful_set(1), POD: pod(phase="Running", nodeName="gpu-7")},
                   ctx=build(exposure=EXPOSURE))

    assert seen.state == "ready"
    assert seen.details["url"] == "https://nb-lab-nova.notebooks.example.org/"
    assert (seen.details["interface"], seen.details["image"]) == (
        "JupyterLab", "PyTorch (JupyterLab)")
    assert seen.details["node"] == "gpu-7"
    assert observe({STS: stateful_set(1)}).details["url"] == ""


def test_starting_until_its_pod_is_ready():
    assert observe({STS: stateful_set()}).state == "progressing"
    seen = observe({STS: stateful_set(), POD: pod(phase="Pending")})
    assert (seen.state, seen.message) == ("progressing", "Starting JupyterLab.")


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff"])
def test_a_failing_pod_fails_it_in_the_clusters_words(reason):
    failing = pod(phase="Pending", containerStatuses=[{
        "name": "notebook", "ready": False,
        "state": {"waiting": {"reason": reason, "message": f"{reason}: quay.io/… says no"}}}])
    seen = observe({STS: stateful_set(), POD: failing})

    assert (seen.state, seen.reason) == ("failed", reason)
    assert "says no" in seen.message


def test_no_node_with_room_is_degraded_not_failed():
    waiting = pod(phase="Pending", conditions=[{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}])
    seen = observe({STS: stateful_set(), POD: waiting}, clean(gpu=H100))

    assert (seen.state, seen.reason) == ("degraded", "Unschedulable")
    assert "Insufficient GPUs" in seen.message


# -- how a person opens it ---------------------------------------------------------------------


def test_connection_through_the_gateway():
    connection = KIND.connection({}, clean(), build(exposure=EXPOSURE))

    assert connection.items[0] == ("Open", "https://nb-lab-nova.notebooks.example.org/")
    assert connection.commands == ()
    assert any("Sign in" in note for note in connection.notes)


def test_connection_without_exposure_is_a_port_forward():
    connection = KIND.connection({}, clean(), build())

    assert "Open" not in dict(connection.items)
    assert connection.commands == (
        ("Forward a local port to it", "kubectl -n tenant-nova port-forward svc/nb-lab 8888:80"),
        ("Then open", "http://localhost:8888"),
    )
    assert connection.items == ()  # image, interface and home volume: on its own card


def test_connection_under_the_simulated_gateway_prefix():
    simulated = dataclasses.replace(EXPOSURE, url_prefix="http://portal.test/simulated-gateway")

    assert KIND.connection({}, clean(), build(exposure=simulated)).items[0] == (
        "Open", "http://portal.test/simulated-gateway/nb-lab-nova.notebooks.example.org/")
