"""The VM kind: what it accepts, the KubeVirt VirtualMachine it builds (checked against the
upstream schema and field by field), what it holds, how it reads the cluster back, and how a
person powers, resizes and reaches it."""

import contextlib
import copy
import dataclasses
import datetime as dt

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inventory.resource_classes import GPU_MODELS
from tenants.workloads.kinds import vm
from tenants.workloads.kinds.base import (
    LABEL_TENANT,
    LABEL_WORKLOAD_ID,
    RESERVED_FOR_KEY,
    BuildContext,
    GpuOffer,
    LaunchContext,
    SpecError,
)
from tenants.workloads.kinds.schemas import check_manifests, manifest_errors
from tenants.workloads.kinds.vm import PASSTHROUGH_DEVICES, permitted_host_devices
from tenants.workloads.selectors import admission_labels, priority_labels

from . import openssh_keys

H100 = "gpu:nvidia-h100-80gb"
A100_MIG = "mig:nvidia-a100-80gb:1g.10gb"
L40S_HAMI = "hami:nvidia-l40s:cores"
OFFERS = (
    GpuOffer(H100, "NVIDIA H100 80GB HBM3 GPUs", 8),
    GpuOffer(A100_MIG, "NVIDIA A100 SXM4 80GB MIG 1g.10gb", 56),
    GpuOffer(L40S_HAMI, "NVIDIA L40S HAMi GPU compute (% of a GPU)", 400),
)
IMAGES = {
    "ubuntu-24.04": {
        "label": "Ubuntu 24.04 LTS",
        "container_disk": "quay.io/containerdisks/ubuntu:24.04",
        "min_disk_gib": 10,
        "default_user": "ubuntu",
    },
    "fedora-41": {
        "label": "Fedora 41",
        "container_disk": "quay.io/containerdisks/fedora:41",
        "min_disk_gib": 5,
        "default_user": "fedora",
    },
}
VM = ("kubevirt.io/v1", "VirtualMachine", "train-box")
VMI = ("kubevirt.io/v1", "VirtualMachineInstance", "train-box")
DV = ("cdi.kubevirt.io/v1beta1", "DataVolume", "train-box-root")


def launch(isolation="shared", quota=None, catalog=None):
    quota = {H100: 16, A100_MIG: 14, L40S_HAMI: 200} if quota is None else quota
    catalog = {"vm_images": IMAGES} if catalog is None else catalog
    return LaunchContext(isolation=isolation, quota=quota, gpu_offers=OFFERS, catalog=catalog)


def build(isolation="shared"):
    return BuildContext(
        workload_id=42,
        name="train-box",
        kind="vm",
        tenant_slug="acme",
        namespace="tenant-acme",
        isolation=isolation,
    )


def asked(**changes):
    spec = {
        "image": "ubuntu-24.04",
        "cpu": 16,
        "memory_gib": 128,
        "disk_gib": 200,
        "gpu": H100,
        "gpus": 2,
        "ssh_public_key": openssh_keys.ed25519_public(),
    }
    spec.update(changes)
    return {k: v for k, v in spec.items() if v is not None}


def clean(isolation="shared", **changes):
    return vm.KIND.validate(asked(**changes), launch(isolation))


def refused(spec, ctx=None):
    with pytest.raises(SpecError) as caught:
        vm.KIND.validate(spec, ctx or launch())
    return caught.value.fields


def the_vm(spec, isolation="shared"):
    (manifest,) = vm.KIND.manifests(spec, build(isolation))
    return manifest


# -- what it accepts ------------------------------------------------------------------------


def test_a_catalog_image_resolves_to_its_disk_and_user_in_the_clean_spec():
    spec = clean()

    assert spec == {
        "image": "ubuntu-24.04",
        "custom_image": "",
        "container_disk": "quay.io/containerdisks/ubuntu:24.04",
        "image_label": "Ubuntu 24.04 LTS",
        "default_user": "ubuntu",
        "cpu": 16,
        "memory_gib": 128,
        "disk_gib": 200,
        "gpu": H100,
        "gpus": 2,
        "ssh_public_key": openssh_keys.ed25519_public(),
        "running": True,
        "restarted_at": "",
    }
    assert vm.KIND.validate(spec, launch()) == spec  # a stored spec validates again, unchanged


def test_a_custom_container_disk_needs_its_default_user():
    spec = clean(
        image=None, custom_image="registry.acme.io:5000/vms/rocky:9.4", default_user="rocky"
    )

    assert (spec["image"], spec["container_disk"], spec["default_user"]) == (
        "",
        "registry.acme.io:5000/vms/rocky:9.4",
        "rocky",
    )
    fields = refused(asked(image=None, custom_image="registry.acme.io/vms/rocky:9.4"))
    assert list(fields) == ["default_user"]


def test_zero_gpus_of_a_model_is_a_vm_without_gpus():
    spec = clean(gpus=0)

    assert (spec["gpu"], spec["gpus"]) == ("", 0)
    assert "gpus" not in the_vm(spec)["spec"]["template"]["spec"]["domain"]["devices"]
    assert "gpu" in refused(asked(gpu=A100_MIG, gpus=0))  # still a class a VM cannot have


def test_scaling_a_vm_to_zero_gpus_keeps_the_model_for_later():
    without = vm.KIND.scale(clean(), {"gpus": 0}, launch())

    assert (without["gpu"], without["gpus"]) == (H100, 0)
    assert H100 not in vm.KIND.demand(without)
    assert "gpus" not in the_vm(without)["spec"]["template"]["spec"]["domain"]["devices"]
    assert vm.KIND.scale(without, {"gpus": 2}, launch())["gpus"] == 2


def test_a_vm_without_gpu_and_stopped_from_the_start():
    spec = clean(gpu=None, gpus=None, running="false", cpu="4", memory_gib="8")

    assert (spec["gpu"], spec["gpus"], spec["running"], spec["cpu"]) == ("", 0, False, 4)


@pytest.mark.parametrize(
    "key",
    [
        openssh_keys.ed25519_public(),
        openssh_keys.ed25519_public(comment=""),
        openssh_keys.ecdsa_public("secp256r1"),
        openssh_keys.ecdsa_public("secp384r1"),
        openssh_keys.ecdsa_public("secp521r1"),
        openssh_keys.rsa_public(2048),
        openssh_keys.security_key_public(),
        f"  {openssh_keys.ed25519_public()}\n",
    ],
    # The keys are made afresh on every run: named, so every process collects the same tests.
    ids=[
        "ed25519", "ed25519-no-comment", "ecdsa-p256", "ecdsa-p384", "ecdsa-p521", "rsa-2048",
        "security-key", "ed25519-padded",
    ],
)
def test_accepted_ssh_keys(key):
    assert clean(ssh_public_key=key)["ssh_public_key"] == key.strip()


def _truncated(key: str) -> str:
    key_type, blob, *_ = key.split()
    return f"{key_type} {blob[:-12]}"


INVALID_KEYS = [
    (_truncated(openssh_keys.ed25519_public()), "cut short"),
    (openssh_keys.ed25519_public().replace("AAAA", "AA*A", 1), "base64"),
    (openssh_keys.ed25519_private_text(), "private key"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----", "private"),
    (openssh_keys.rsa_public(1024), "1024 bits is too weak"),
    (
        "ssh-dss AAAAB3NzaC1kc3MAAACBAP1/U4EddRIpUt9KnC7s5Of2EbdSPO9EAMMeP4C2USZpRV1AIlH7 me",
        "type",
    ),
    ("ecdsa-sha2-nistp256 " + openssh_keys.ed25519_public().split()[1], "not an ecdsa"),
    ('from="10.0.0.0/8",no-pty ' + openssh_keys.ed25519_public(), "Options"),
    (openssh_keys.ed25519_public() + "\n" + openssh_keys.rsa_public(2048), "One key"),
    ("ssh-ed25519", "missing"),
    ("", "Paste"),
    (["ssh-ed25519", "AAAA"], "Paste"),
    ("---- BEGIN SSH2 PUBLIC KEY ----\nAAAAC3Nza\n---- END SSH2 PUBLIC KEY ----", "RFC 4716"),
    (openssh_keys.ed25519_public(comment="bell\x07"), "comment"),
]


# Named by what the error says: the keys are made afresh on every run.
@pytest.mark.parametrize(("key", "says"), INVALID_KEYS, ids=[says for _, says in INVALID_KEYS])
def test_an_invalid_ssh_key_is_a_field_error(key, says):
    fields = refused(asked(ssh_public_key=key))

    assert list(fields) == ["ssh_public_key"]
    assert says in fields["ssh_public_key"][0]


def test_a_disk_smaller_than_the_image_is_a_field_error():
    fields = refused(asked(disk_gib=8))

    assert fields == {
        "disk_gib": ["A disk smaller than the image: Ubuntu 24.04 LTS needs at least 10 GiB."]
    }
    assert clean(disk_gib=10)["disk_gib"] == 10


@pytest.mark.parametrize(
    "reference",
    [
        "ubuntu:24.04",  # no registry
        "quay.io/Containerdisks/ubuntu",  # upper case in the path
        "quay.io/containerdisks//ubuntu",
        "quay.io/containerdisks/ubuntu:",
        "quay.io/containerdisks/ubuntu:.hidden",
        "quay.io/containerdisks/ubuntu@sha256:1234",
        "quay.io/containerdisks/ubuntu@md5:" + "a" * 32,
        "quay.io:123456/ubuntu",
        "docker://quay.io/containerdisks/ubuntu",
        "quay.io/containerdisks/ubuntu 24.04",
        "quay.io/" + "a" * 300,
        "\uff51uay.io/containerdisks/ubuntu",  # a full-width q
        42,
    ],
)
def test_an_image_reference_that_is_not_a_valid_oci_reference_is_a_field_error(reference):
    fields = refused(asked(image=None, custom_image=reference, default_user="ubuntu"))

    assert list(fields) == ["custom_image"]


@pytest.mark.parametrize(
    "reference",
    [
        "quay.io/containerdisks/ubuntu",
        "localhost:5000/disk",
        "10.0.0.5:5000/vms/rocky_linux-9:9.4",
        "[fd00::5]:5000/vms/rocky",
        "registry.acme.io/vms/rocky:9.4@sha256:" + "0123456789abcdef" * 4,
        "ghcr.io/acme/vm-images/ubuntu@sha256:" + "f" * 64,
    ],
)
def test_valid_oci_references_are_accepted(reference):
    assert clean(image=None, custom_image=reference, default_user="ubuntu")["container_disk"] == (
        reference
    )


def test_mig_and_hami_cannot_be_passed_through_to_a_vm():
    assert "whole GPUs by PCI passthrough: MIG" in refused(asked(gpu=A100_MIG, gpus=1))["gpu"][0]
    assert "HAMi shares are for containers" in refused(asked(gpu=L40S_HAMI, gpus=1))["gpu"][0]


def test_mig_for_a_dedicated_tenant_is_refused_too():
    fields = refused(asked(gpu=A100_MIG, gpus=1), launch("dedicated"))

    assert list(fields) == ["gpu"]


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"gpus": 9}, "gpus", "no node of your pool has more"),
        ({"gpus": -1}, "gpus", "At least 0"),
        ({"gpu": "gpu:nvidia-l40s"}, "gpu", "Your pool has no"),
        ({"gpu": "gpu:nvidia-v100"}, "gpu", "Not a GPU class"),
        ({"gpu": "cpu"}, "gpu", "Not a GPU class"),
        ({"gpu": None, "gpus": 2}, "gpus", "Pick a GPU model first"),
        ({"cpu": 0}, "cpu", "At least 1"),
        ({"cpu": 129}, "cpu", "At most 128"),
        ({"cpu": None}, "cpu", "Required"),
        ({"memory_gib": 2049}, "memory_gib", "At most 2,048"),
        ({"memory_gib": -1}, "memory_gib", "At least 1"),
        ({"disk_gib": 16385}, "disk_gib", "At most 16,384"),
        ({"disk_gib": 10**400}, "disk_gib", "At most"),
        ({"disk_gib": "9" * 5000}, "disk_gib", "whole number"),
        ({"cpu": 2.5}, "cpu", "whole number"),
        ({"cpu": True}, "cpu", "whole number"),
        ({"running": "maybe"}, "running", "Yes or no"),
        (
            {"image": "windows-11"},
            "image",
            "Not one of the images offered (fedora-41, ubuntu-24.04)",
        ),
        ({"image": ["ubuntu-24.04"]}, "image", "Pick an image"),
        ({"image": None}, "image", "Pick an image"),
        ({"custom_image": "quay.io/x/y", "default_user": "x"}, "custom_image", "not both"),
        ({"memory": 64}, "memory", "Unknown field"),
        ({"restarted_at": "yesterday"}, "restarted_at", "ISO 8601"),
    ],
)
def test_bad_input_is_a_field_error(changes, field, says):
    fields = refused(asked(**changes))

    assert field in fields
    assert says in " ".join(fields[field])


def test_gpus_need_quota_of_that_class():
    fields = refused(asked(), launch(quota={H100: 0}))

    assert fields == {
        "gpu": ["Your quota holds no NVIDIA H100 80GB HBM3 GPUs: request some first."]
    }


def test_every_field_error_is_reported_at_once():
    fields = refused(asked(cpu=0, disk_gib=1, ssh_public_key="nope", gpu=A100_MIG))

    assert set(fields) == {"cpu", "disk_gib", "ssh_public_key", "gpu"}


@pytest.mark.parametrize("spec", [None, [], "vm", 42, {1: "x"}, {"cpu": {"a": 1}}])
def test_a_spec_of_the_wrong_shape_is_a_spec_error(spec):
    with pytest.raises(SpecError):
        vm.KIND.validate(spec, launch())


def test_a_misconfigured_catalog_image_says_so_instead_of_crashing():
    broken = {"vm_images": {"ubuntu-24.04": {"label": "Ubuntu", "container_disk": "ubuntu"}}}

    fields = refused(asked(), launch(catalog=broken))

    assert fields == {
        "image": ["This image is misconfigured in the portal: tell the platform team."]
    }
    assert "image" in refused(asked(), launch(catalog={"vm_images": ["not", "a", "mapping"]}))


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
VALUES = JUNK | st.sampled_from(
    [H100, A100_MIG, "ubuntu-24.04", "quay.io/a/b:1", "16", "-3", openssh_keys.ed25519_public()]
)


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
@pytest.mark.parametrize("field", sorted(vm.FIELDS))
def test_weird_values_in_any_field_only_ever_raise_spec_error(field, value):
    with contextlib.suppress(SpecError):
        vm.KIND.validate(asked(**{field: value}), launch())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.sampled_from(sorted(vm.FIELDS)) | st.text(max_size=10), VALUES, max_size=8)
    | JUNK
)
def test_junk_specs_only_ever_raise_spec_error(spec):
    try:
        clean_spec = vm.KIND.validate(spec, launch())
    except SpecError:
        return
    check_manifests(vm.KIND.manifests(clean_spec, build()))


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(sorted(vm.FIELDS)) | st.text(max_size=10), VALUES, max_size=4)
)
def test_junk_scale_changes_only_ever_raise_spec_error(changes):
    with contextlib.suppress(SpecError):
        vm.KIND.scale(clean(), changes, launch())


# -- the VirtualMachine it builds -----------------------------------------------------------


@pytest.mark.parametrize("isolation", ["shared", "dedicated"])
@pytest.mark.parametrize("running", [True, False])
@pytest.mark.parametrize("gpu", [H100, None])
def test_the_manifest_validates_against_the_kubevirt_schema(isolation, running, gpu):
    spec = clean(isolation, running=running, gpu=gpu, gpus=2 if gpu else None)

    manifests = vm.KIND.manifests(spec, build(isolation))

    assert [m["kind"] for m in manifests] == ["VirtualMachine"]
    assert manifest_errors(manifests[0]) == []


def test_the_schema_check_does_catch_a_broken_vm():
    broken = copy.deepcopy(the_vm(clean()))
    del broken["spec"]["template"]["spec"]["domain"]["devices"]
    broken["spec"]["template"]["spec"]["domain"]["devices"] = {"gpus": [{"deviceName": "x"}]}

    assert manifest_errors(broken) == [
        "spec.template.spec.domain.devices.gpus.0: 'name' is a required property"
    ]


def test_the_vm_field_by_field():
    manifest = the_vm(clean())
    spec, template = manifest["spec"], manifest["spec"]["template"]
    domain = template["spec"]["domain"]

    assert (manifest["apiVersion"], manifest["kind"]) == ("kubevirt.io/v1", "VirtualMachine")
    assert manifest["metadata"]["name"] == "train-box"
    assert manifest["metadata"]["namespace"] == "tenant-acme"
    for labels in (manifest["metadata"]["labels"], template["metadata"]["labels"]):
        assert labels[LABEL_TENANT] == "acme" and labels[LABEL_WORKLOAD_ID] == "42"
        assert labels["kubevirt.io/vm"] == "train-box"
    assert spec["runStrategy"] == "Always" and "running" not in spec
    (root,) = spec["dataVolumeTemplates"]
    assert root["metadata"]["name"] == "train-box-root"
    assert root["metadata"]["labels"][LABEL_WORKLOAD_ID] == "42"
    assert root["spec"]["source"] == {
        "registry": {"url": "docker://quay.io/containerdisks/ubuntu:24.04"}
    }
    assert root["spec"]["storage"] == {"resources": {"requests": {"storage": "200Gi"}}}
    assert domain["cpu"] == {"cores": 16, "sockets": 1, "threads": 1}
    assert domain["memory"] == {"guest": "128Gi"}
    assert domain["resources"] == {
        "requests": {"cpu": "16", "memory": "128Gi"},
        "limits": {"cpu": "16", "memory": "128Gi"},
    }
    assert domain["devices"]["gpus"] == [
        {"name": "gpu0", "deviceName": "nvidia.com/GH100_H100_SXM5_80GB"},
        {"name": "gpu1", "deviceName": "nvidia.com/GH100_H100_SXM5_80GB"},
    ]
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["root"]["dataVolume"] == {"name": "train-box-root"}
    disks = [d["name"] for d in domain["devices"]["disks"]]
    assert disks == ["root", "cloudinit"]
    assert "nodeSelector" not in template["spec"] and "tolerations" not in template["spec"]
    assert "annotations" not in template["metadata"]


def test_cloud_init_puts_the_key_in_the_default_users_authorized_keys():
    key = openssh_keys.ed25519_public(comment='quote " and colon: # hash')
    manifest = the_vm(clean(ssh_public_key=key))
    volumes = {v["name"]: v for v in manifest["spec"]["template"]["spec"]["volumes"]}

    user_data = volumes["cloudinit"]["cloudInitNoCloud"]["userData"]

    assert user_data.startswith("#cloud-config\n")
    assert yaml.safe_load(user_data) == {"ssh_pwauth": False, "ssh_authorized_keys": [key]}


def test_a_stopped_vm_is_halted_and_a_cpu_only_vm_has_no_gpu_devices():
    manifest = the_vm(clean(running=False, gpu=None, gpus=None))

    assert manifest["spec"]["runStrategy"] == "Halted"
    assert "gpus" not in manifest["spec"]["template"]["spec"]["domain"]["devices"]


def test_a_dedicated_tenants_vm_runs_on_its_reserved_nodes_only():
    template = the_vm(clean("dedicated"), "dedicated")["spec"]["template"]["spec"]

    assert template["nodeSelector"] == {RESERVED_FOR_KEY: "acme"}
    assert template["tolerations"] == [
        {"key": RESERVED_FOR_KEY, "operator": "Equal", "value": "acme", "effect": "NoSchedule"}
    ]


def test_every_gpu_model_has_a_passthrough_device_the_admins_can_permit():
    assert set(PASSTHROUGH_DEVICES) == set(GPU_MODELS)
    permitted = permitted_host_devices()["pciHostDevices"]
    assert {p["resourceName"] for p in permitted} == {
        d.resource_name for d in PASSTHROUGH_DEVICES.values()
    }
    assert all(p["pciVendorSelector"].startswith("10DE:") for p in permitted)
    assert all(p["externalResourceProvider"] is True for p in permitted)


def test_owned_kinds_include_what_kubevirt_makes_from_the_vm():
    assert vm.KEY == "vm" and vm.KIND.KEY == "vm"
    assert vm.OWNED_KINDS == (
        ("kubevirt.io/v1", "VirtualMachine"),
        ("kubevirt.io/v1", "VirtualMachineInstance"),
        ("cdi.kubevirt.io/v1beta1", "DataVolume"),
        ("v1", "Pod"),  # the VMI's virt-launcher pod
    )


QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


@pytest.mark.parametrize("isolation", ["shared", "dedicated"])
def test_a_gpu_vms_launcher_pod_queues_in_the_tenants_local_queue_at_interactive_priority(
    isolation,
):
    ctx = dataclasses.replace(build(isolation), admission_labels=admission_labels("vm"))
    (manifest,) = vm.KIND.manifests(clean(isolation), ctx)

    # KubeVirt copies the template's labels to the VMI and its launcher pod, which Kueue gates.
    template = manifest["spec"]["template"]["metadata"]["labels"]
    assert template[QUEUE_NAME_LABEL] == "default"
    assert template[PRIORITY_CLASS_LABEL] == "portal-interactive"
    assert template[LABEL_WORKLOAD_ID] == "42"
    # The VirtualMachine itself is no pod: Kueue has no KubeVirt integration to hand it to.
    assert QUEUE_NAME_LABEL not in manifest["metadata"]["labels"]
    assert manifest_errors(manifest) == []


def test_a_vm_without_gpus_carries_its_priority_alone():
    """Kueue's LocalQueue defaulting queues its launcher pod: at the interactive priority."""
    ctx = dataclasses.replace(build(), admission_labels=admission_labels("vm"),
                              priority_labels=priority_labels("vm"))
    (manifest,) = vm.KIND.manifests(clean(gpu=None, gpus=None), ctx)

    assert QUEUE_NAME_LABEL not in str(manifest)
    assert manifest["spec"]["template"]["metadata"]["labels"][PRIORITY_CLASS_LABEL] == (
        "portal-interactive")


# -- demand -----------------------------------------------------------------------------------


def test_a_running_vm_holds_its_gpus_cpu_memory_and_disk():
    assert vm.KIND.demand(clean()) == {
        H100: 2,
        "cpu": 16,
        "memory-gib": 128,
        "storage-gib": 200,
        "count:vm": 1,
    }


def test_a_stopped_vm_keeps_its_disk_and_releases_its_gpus():
    assert vm.KIND.demand(clean(running=False)) == {"storage-gib": 200, "count:vm": 1}
    assert vm.KIND.demand(vm.power(clean(), "stop")) == {"storage-gib": 200, "count:vm": 1}


# -- status -----------------------------------------------------------------------------------


def _condition(kind, status, reason="", message="", at="2026-11-20T10:00:00Z"):
    cond = {"type": kind, "status": status, "lastTransitionTime": at}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def cluster_vm(printable, *conditions, **status):
    obj = the_vm(clean())
    obj["metadata"] |= {"generation": 1, "uid": "6f1c0c5e-0d8e-4b8a-9d55-2f0f5c1d2a10"}
    obj["status"] = {"printableStatus": printable, "conditions": list(conditions), **status}
    assert manifest_errors(obj) == []  # real-shaped: the status validates against the CRD too
    return obj


def cluster_vmi(ip="10.244.3.17", annotations=None, phase="Running"):
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {
            "name": "train-box",
            "namespace": "tenant-acme",
            "annotations": annotations or {},
            "ownerReferences": [
                {
                    "apiVersion": "kubevirt.io/v1",
                    "kind": "VirtualMachine",
                    "name": "train-box",
                    "uid": "6f1c0c5e-0d8e-4b8a-9d55-2f0f5c1d2a10",
                    "controller": True,
                }
            ],
        },
        "status": {
            "phase": phase,
            "nodeName": "gpu-node-07",
            "interfaces": [
                {
                    "name": "default",
                    "interfaceName": "eth0",
                    "ipAddress": ip,
                    "ipAddresses": [ip],
                    "mac": "02:5e:8a:00:00:01",
                    "infoSource": "domain, guest-agent",
                }
            ],
        },
    }


def observe(objects, spec=None):
    return vm.KIND.observe(objects, spec or clean(), build())


RUNNING_READY = cluster_vm(
    "Running",
    _condition("Ready", "True", at="2026-11-20T10:02:00Z"),
    _condition("LiveMigratable", "False", "DisksNotLiveMigratable", "cannot migrate: GPU"),
    _condition("AgentConnected", "True", at="2026-11-20T10:03:00Z"),
    created=True,
    ready=True,
)
UNSCHEDULABLE_MESSAGE = (
    "0/12 nodes are available: 12 Insufficient nvidia.com/GH100_H100_SXM5_80GB. preemption: "
    "0/12 nodes are available: 12 No preemption victims found for incoming pod."
)


VMI_UID = "0b7d6a3e-5c1f-4a8e-9e2d-7f3a1c9b4d21"


def launcher_pod(vmi_uid=VMI_UID, *, gated=True):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"virt-launcher-train-box-{vmi_uid[:5]}",
            "namespace": "tenant-acme",
            "uid": f"pod-of-{vmi_uid}",
            "labels": {LABEL_WORKLOAD_ID: "42", "kubevirt.io": "virt-launcher",
                       "kubevirt.io/created-by": vmi_uid, QUEUE_NAME_LABEL: "default"},
            "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                                 "name": "train-box", "uid": vmi_uid, "controller": True}],
        },
        "spec": {"containers": [{"name": "compute", "image": "virt-launcher"}]},
        "status": {"phase": "Pending"},
    }
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "SchedulingGated"}]
    return pod


def scheduling_vmi():
    vmi = cluster_vmi(ip="", phase="Scheduling")
    vmi["metadata"]["uid"] = VMI_UID
    del vmi["status"]["nodeName"]
    return vmi


STARTING = cluster_vm(
    "Starting",
    _condition("Ready", "False", "GuestNotRunning", "Guest VM is not reported as running"),
    created=True,
    ready=False,
)


def test_a_vm_whose_launcher_pod_waits_for_kueue_is_queued():
    pod = launcher_pod()
    seen = observe({VM: STARTING, VMI: scheduling_vmi(),
                    ("v1", "Pod", pod["metadata"]["name"]): pod})

    assert (seen.state, seen.reason) == ("progressing", "Queued")
    assert "Waiting in the tenant's queue" in seen.message


def test_a_vm_whose_launcher_pod_kueue_admitted_is_starting_not_queued():
    pod = launcher_pod(gated=False)
    seen = observe({VM: STARTING, VMI: scheduling_vmi(),
                    ("v1", "Pod", pod["metadata"]["name"]): pod})

    assert (seen.state, seen.reason) == ("progressing", "Starting")


def test_a_gated_pod_of_an_earlier_instance_does_not_make_the_vm_queued():
    stale = launcher_pod("9a9a9a9a-0000-4000-8000-000000000000")
    seen = observe({VM: RUNNING_READY, VMI: {**cluster_vmi(), "metadata": {
        **cluster_vmi()["metadata"], "uid": VMI_UID}},
        ("v1", "Pod", stale["metadata"]["name"]): stale})

    assert (seen.state, seen.reason) == ("ready", "Running")


def test_nothing_in_the_cluster_is_absent():
    assert observe({}).state == "absent"


def test_a_running_ready_vm_is_ready_with_its_ip():
    seen = observe({VM: RUNNING_READY, VMI: cluster_vmi()})

    assert (seen.state, seen.reason) == ("ready", "Running")
    assert seen.details["ip"] == "10.244.3.17"
    assert seen.details["node"] == "gpu-node-07"
    assert seen.details["power"] == "running"
    assert seen.conditions[0]["type"] == "AgentConnected"  # newest first


def test_a_vm_that_no_node_has_room_for_waits_degraded_and_says_why():
    unschedulable = cluster_vm(
        "ErrorUnschedulable",
        _condition("Ready", "False", "GuestNotRunning", "Guest VM is not reported as running"),
        _condition("PodScheduled", "False", "Unschedulable", UNSCHEDULABLE_MESSAGE),
        created=True,
        ready=False,
    )

    seen = observe({VM: unschedulable, VMI: cluster_vmi(ip="", phase="Scheduling")})

    # The scheduler retries: it waits for room (degraded), never failed, in its words.
    assert (seen.state, seen.reason) == ("degraded", "Unschedulable")
    assert seen.message == UNSCHEDULABLE_MESSAGE.replace(
        "nvidia.com/GH100_H100_SXM5_80GB", "NVIDIA H100 80GB HBM3 GPUs (passthrough)"
    )
    assert seen.details["ip"] == ""


@pytest.mark.parametrize(
    ("printable", "cond", "message"),
    [
        (
            "ErrImagePull",
            _condition("Synchronized", "False", "ErrImagePull", 'failed to pull image "x": 404'),
            'failed to pull image "x": 404',
        ),
        (
            "ImagePullBackOff",
            _condition("Synchronized", "False", "ImagePullBackOff", "Back-off pulling image"),
            "Back-off pulling image",
        ),
        (
            "DataVolumeError",
            _condition("DataVolumesReady", "False", "Failed", "import failed: 401 Unauthorized"),
            "import failed: 401 Unauthorized",
        ),
        (
            "ErrorPvcNotFound",
            _condition(
                "Synchronized", "False", "FailedPvcNotFound", "PVC train-box-root not found"
            ),
            "PVC train-box-root not found",
        ),
    ],
)
def test_failures_carry_the_clusters_words(printable, cond, message):
    seen = observe({VM: cluster_vm(printable, cond)})

    assert (seen.state, seen.reason, seen.message) == ("failed", printable, message)


def test_a_crash_looping_vm_has_failed_with_its_start_failures():
    crashing = cluster_vm(
        "CrashLoopBackOff",
        startFailure={"consecutiveFailCount": 3, "retryAfterTimestamp": "2026-11-20T10:05:00Z"},
    )

    seen = observe({VM: crashing})

    assert seen.state == "failed"
    assert "failed to start 3 times" in seen.message and "2026-11-20T10:05:00Z" in seen.message


@pytest.mark.parametrize(
    "printable",
    ["Provisioning", "Starting", "WaitingForVolumeBinding", "Stopping", "Stopped", "Unknown", ""],
)
def test_a_vm_on_its_way_up_is_progressing(printable):
    seen = observe({VM: cluster_vm(printable, _condition("Ready", "False", "VMINotExists"))})

    assert seen.state == "progressing"
    assert seen.details["printable_status"] == (printable or "Pending")


def test_disk_import_progress_is_shown_while_provisioning():
    disk = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {"name": "train-box-root"},
        "status": {"phase": "ImportInProgress", "progress": "45.20%"},
    }

    seen = observe({VM: cluster_vm("Provisioning"), DV: disk})

    assert (seen.state, seen.details["disk_import_progress"]) == ("progressing", "45.20%")


def test_a_paused_vm_or_a_running_one_that_is_not_ready_is_degraded():
    paused = cluster_vm("Paused", _condition("Paused", "True", "PausedByUser"))
    unready = cluster_vm(
        "Running", _condition("Ready", "False", "GuestNotReady", "readiness probe failed")
    )

    assert observe({VM: paused, VMI: cluster_vmi()}).state == "degraded"
    seen = observe({VM: unready, VMI: cluster_vmi()})
    assert (seen.state, seen.reason, seen.message) == (
        "degraded",
        "GuestNotReady",
        "readiness probe failed",
    )


def test_a_stopped_vm_that_should_be_stopped_is_settled():
    stopped = cluster_vm("Stopped", _condition("Ready", "False", "VMINotExists"))
    spec = clean(running=False)

    seen = observe({VM: stopped}, spec)

    assert (seen.state, seen.details["power"]) == ("ready", "stopped")
    assert "disk is kept" in seen.message
    assert observe({VM: RUNNING_READY, VMI: cluster_vmi()}, spec).state == "progressing"


def test_terminating_is_progressing():
    assert observe({VM: cluster_vm("Terminating")}).state == "progressing"


def test_a_resized_running_vm_says_it_needs_a_restart():
    resized = cluster_vm(
        "Running",
        _condition("Ready", "True"),
        _condition("RestartRequired", "True", message="a non-live-updatable field was changed"),
    )

    seen = observe({VM: resized, VMI: cluster_vmi()})

    assert (seen.state, seen.details["restart_required"]) == ("ready", True)
    assert "Restart it" in seen.message


# -- power ------------------------------------------------------------------------------------

NOON = dt.datetime(2026, 11, 20, 12, 0, 0, 123, tzinfo=dt.UTC)


def test_stop_and_start_change_only_the_power_state():
    stopped = vm.power(clean(), "stop")

    assert stopped == clean() | {"running": False}
    assert vm.power(stopped, "start") == clean()
    assert the_vm(stopped)["spec"]["runStrategy"] == "Halted"


def test_a_restart_stamps_the_template_and_asks_for_a_fresh_vmi():
    restarted = vm.power(clean(), "restart", now=NOON)

    assert restarted["restarted_at"] == "2026-11-20T12:00:00Z"
    assert restarted["running"] is True
    template = the_vm(restarted)["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/restartedAt": "2026-11-20T12:00:00Z"
    }
    assert vm.KIND.validate(restarted, launch()) == restarted

    old_vmi = cluster_vmi()
    assert vm.KIND.needs_restart({VMI: old_vmi}, restarted, build())
    seen = observe({VM: RUNNING_READY, VMI: old_vmi}, restarted)
    assert (seen.state, seen.reason) == ("progressing", "Restarting")

    fresh_vmi = cluster_vmi(
        annotations={"kubectl.kubernetes.io/restartedAt": "2026-11-20T12:00:00Z"}
    )
    assert not vm.KIND.needs_restart({VMI: fresh_vmi}, restarted, build())
    assert observe({VM: RUNNING_READY, VMI: fresh_vmi}, restarted).state == "ready"


def test_restarting_a_stopped_vm_starts_it_and_no_vmi_means_nothing_to_delete():
    restarted = vm.power(clean(running=False), "restart", now=NOON)

    assert restarted["running"] is True
    assert not vm.KIND.needs_restart({}, restarted, build())


def test_an_unknown_power_action_is_a_spec_error():
    with pytest.raises(SpecError) as caught:
        vm.power(clean(), "reboot")
    assert list(caught.value.fields) == ["action"]


# -- scale ------------------------------------------------------------------------------------


def test_scale_grows_cpu_memory_gpus_and_disk():
    bigger = vm.KIND.scale(
        clean(), {"cpu": 32, "memory_gib": "256", "gpus": 4, "disk_gib": 500}, launch()
    )

    assert bigger == clean() | {"cpu": 32, "memory_gib": 256, "gpus": 4, "disk_gib": 500}
    assert vm.KIND.demand(bigger)[H100] == 4
    key, patch = vm.disk_expansion(bigger, build())
    assert key == ("v1", "PersistentVolumeClaim", "train-box-root")
    assert patch == {"spec": {"resources": {"requests": {"storage": "500Gi"}}}}


def test_scale_may_shrink_cpu_and_memory_but_never_the_disk():
    smaller = vm.KIND.scale(clean(), {"cpu": 4, "memory_gib": 16}, launch())
    assert (smaller["cpu"], smaller["memory_gib"]) == (4, 16)

    with pytest.raises(SpecError) as caught:
        vm.KIND.scale(clean(), {"disk_gib": 100}, launch())
    assert caught.value.fields == {"disk_gib": ["A disk can only grow: it holds 200 GiB now."]}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"gpus": 9}, "gpus"),
        ({"image": "fedora-41"}, "image"),
        ({"gpu": "gpu:nvidia-l40s"}, "gpu"),
        ({"colour": "blue"}, "colour"),
        ({"cpu": 1000}, "cpu"),
    ],
)
def test_scale_refuses_what_cannot_change(changes, field):
    with pytest.raises(SpecError) as caught:
        vm.KIND.scale(clean(), changes, launch())
    assert field in caught.value.fields


def test_gpus_cannot_be_added_to_a_vm_without_a_gpu_model():
    with pytest.raises(SpecError) as caught:
        vm.KIND.scale(clean(gpu=None, gpus=None), {"gpus": 1}, launch())
    assert list(caught.value.fields) == ["gpus"]


# -- connection -------------------------------------------------------------------------------


def test_connection_gives_the_ip_the_ssh_command_and_the_virtctl_ways_in():
    reached = vm.KIND.connection({VM: RUNNING_READY, VMI: cluster_vmi()}, clean(), build())

    items = dict(reached.items)
    commands = [command for _, command in reached.commands]
    assert items["IP address"] == "10.244.3.17"
    assert items["User"] == "ubuntu"
    assert "ssh ubuntu@10.244.3.17" in commands
    assert "virtctl ssh ubuntu@vm/train-box.tenant-acme" in commands
    assert any(
        c.startswith("virtctl port-forward vm/train-box.tenant-acme 2222:22") for c in commands
    )
    assert any("No Service is created" in note for note in reached.notes)


def test_a_stopped_vm_has_no_address_to_give():
    reached = vm.KIND.connection({VM: cluster_vm("Stopped")}, clean(running=False), build())

    assert "IP address" not in dict(reached.items)
    assert reached.notes[0] == "The VM is stopped: start it to get an address."
