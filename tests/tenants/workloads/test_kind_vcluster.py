"""The vCluster kind: its Flux objects against the upstream schemas and the chart's own values
schema, field by field; its demand; its state read back from objects shaped as Flux's
helm-controller and the vcluster chart write them; scale; connection; and bad input."""

import base64
import copy
import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inventory.resource_classes import WORKLOAD_KINDS
from tenants.workloads.kinds import schemas, vcluster
from tenants.workloads.kinds.base import (
    LABEL_KIND,
    LABEL_TENANT,
    LABEL_WORKLOAD_ID,
    RESERVED_FOR_KEY,
    BuildContext,
    LaunchContext,
    SpecError,
)
from tenants.workloads.kinds.naming import DNS1035_LABEL

KIND = vcluster.KIND
SHARED = LaunchContext(isolation="shared", quota={"gpu:nvidia-l40s": 8, "cpu": 64})
DEDICATED = LaunchContext(isolation="dedicated", quota={"gpu:nvidia-h200": 16, "cpu": 256})
NO_GPUS = LaunchContext(isolation="shared", quota={"cpu": 64, "gpu:nvidia-l40s": 0})
MIG_ONLY_DEDICATED = LaunchContext(isolation="dedicated", quota={"mig:nvidia-a100-80gb:1g.10gb": 7})


def build(name="dev", isolation="shared", slug="nova", workload_id=41):
    return BuildContext(
        workload_id=workload_id,
        name=name,
        kind="vcluster",
        tenant_slug=slug,
        namespace=f"tenant-{slug}",
        isolation=isolation,
    )


SHARED_BUILD = build()
DEDICATED_BUILD = build(isolation="dedicated", slug="helix")


def manifests(spec_input, launch=SHARED, ctx=SHARED_BUILD):
    return KIND.manifests(KIND.validate(spec_input, launch), ctx)


def release_of(objects):
    (release,) = [m for m in objects if m["kind"] == "HelmRelease"]
    return release


# The contract ----------------------------------------------------------------------------------


def test_the_kind_speaks_the_vocabulary_and_owns_the_flux_objects():
    assert KIND.KEY == "vcluster" and KIND.KEY in WORKLOAD_KINDS
    assert KIND.LABEL == "vCluster"
    assert KIND.OWNED_KINDS == (
        ("source.toolkit.fluxcd.io/v1", "HelmRepository"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("gateway.networking.k8s.io/v1", "TLSRoute"),  # only when exposed (VCLUSTER_DOMAIN)
    )
    built = manifests({})
    assert {(m["apiVersion"], m["kind"]) for m in built} == set(KIND.OWNED_KINDS[:2])


def test_defaults_fill_an_empty_spec():
    assert KIND.validate({}, SHARED) == {
        "kubernetes_version": vcluster.DEFAULT_VERSION,
        "gpu_scheduling": False,
        "cpu": 2,
        "memory_gib": 4,
    }
    assert vcluster.DEFAULT_VERSION in vcluster.SUPPORTED_VERSIONS
    assert vcluster.SUPPORTED_VERSIONS == ("1.34", "1.35", "1.36")


def test_form_input_is_read_as_numbers_and_flags():
    spec = KIND.validate(
        {"kubernetes_version": "v1.36", "gpu_scheduling": "true", "cpu": " 8 ", "memory_gib": "16"},
        SHARED,
    )

    assert spec == {
        "kubernetes_version": "1.36",
        "gpu_scheduling": True,
        "cpu": 8,
        "memory_gib": 16,
    }


# Manifests -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec_input", "launch", "ctx"),
    [
        ({}, SHARED, SHARED_BUILD),
        ({"gpu_scheduling": True, "cpu": 32, "memory_gib": 128}, SHARED, SHARED_BUILD),
        ({"gpu_scheduling": True, "kubernetes_version": "1.34"}, DEDICATED, DEDICATED_BUILD),
        ({"kubernetes_version": "1.36"}, DEDICATED, DEDICATED_BUILD),
    ],
)
def test_manifests_validate_against_flux_and_the_chart_values_schema(spec_input, launch, ctx):
    built = manifests(spec_input, launch, ctx)

    schemas.check_manifests(built)
    for manifest in built:
        assert schemas.manifest_errors(manifest) == []
    assert schemas.values_errors("vcluster", release_of(built)["spec"]["values"]) == []


def test_the_schema_check_would_catch_a_bad_value():
    built = manifests({})
    values = copy.deepcopy(release_of(built)["spec"]["values"])
    values["controlPlane"]["statefulSet"]["resources"]["limit"] = {"cpu": "2"}
    broken = copy.deepcopy(release_of(built))
    del broken["spec"]["interval"]

    assert schemas.values_errors("vcluster", values)
    assert schemas.manifest_errors(broken) == ["spec: 'interval' is a required property"]


def test_objects_carry_the_owner_labels_and_live_in_the_tenant_namespace():
    for manifest in manifests({}):
        metadata = manifest["metadata"]
        assert metadata["namespace"] == "tenant-nova"
        assert metadata["labels"][LABEL_TENANT] == "nova"
        assert metadata["labels"][LABEL_WORKLOAD_ID] == "41"
        assert metadata["labels"][LABEL_KIND] == "vcluster"


def test_the_repository_comes_first_and_the_release_pins_the_chart_from_it():
    repository, release = manifests({})

    assert repository["kind"] == "HelmRepository"
    assert repository["metadata"]["name"] == "dev-charts"
    assert repository["spec"]["url"] == "https://charts.loft.sh"
    assert release["metadata"]["name"] == "dev"
    assert release["spec"]["releaseName"] == "dev"
    assert release["spec"]["chart"]["spec"] == {
        "chart": "vcluster",
        "version": "0.36.1",
        "sourceRef": {"kind": "HelmRepository", "name": "dev-charts"},
    }
    assert release["spec"]["install"] == {"remediation": {"retries": 3}}
    assert release["spec"]["upgrade"]["strategy"]["name"] == "RetryOnFailure"


def test_values_size_the_control_plane_and_export_the_in_cluster_kubeconfig():
    values = release_of(manifests({"cpu": 6, "memory_gib": 12, "kubernetes_version": "1.34"}))[
        "spec"
    ]["values"]
    control_plane = values["controlPlane"]

    assert control_plane["distro"]["k8s"] == {"enabled": True, "version": "v1.34.0"}
    resources = control_plane["statefulSet"]["resources"]
    assert resources["limits"] == {"cpu": "6", "memory": "12Gi"}
    assert resources["requests"] == resources["limits"]
    assert control_plane["statefulSet"]["persistence"]["volumeClaim"] == {
        "enabled": True,
        "size": "5Gi",
        "retentionPolicy": "Delete",
    }
    assert control_plane["statefulSet"]["image"] == {"repository": "loft-sh/vcluster-oss"}
    assert values["exportKubeConfig"]["server"] == "https://dev.tenant-nova.svc:443"
    assert values["policies"] == {
        "resourceQuota": {"enabled": False},
        "limitRange": {"enabled": False},
    }


def test_without_gpu_scheduling_pods_get_no_toleration_and_host_nodes_stay_hidden():
    for launch, ctx in ((SHARED, SHARED_BUILD), (DEDICATED, DEDICATED_BUILD)):
        sync = release_of(manifests({}, launch, ctx))["spec"]["values"]["sync"]
        assert sync == {"fromHost": {"nodes": {"enabled": False}}}


def test_a_dedicated_tenants_gpu_pods_only_land_on_its_reserved_nodes():
    sync = release_of(manifests({"gpu_scheduling": True}, DEDICATED, DEDICATED_BUILD))["spec"][
        "values"
    ]["sync"]

    assert sync["fromHost"]["nodes"] == {
        "enabled": True,
        "selector": {"all": False, "labels": {RESERVED_FOR_KEY: "helix"}},
    }
    assert sync["toHost"]["pods"]["enforceTolerations"] == [f"{RESERVED_FOR_KEY}=helix:NoSchedule"]


def test_a_shared_tenants_gpu_pods_see_real_nodes_but_tolerate_no_reservation():
    sync = release_of(manifests({"gpu_scheduling": True}))["spec"]["values"]["sync"]

    assert sync == {"fromHost": {"nodes": {"enabled": True, "selector": {"all": False}}}}


BATCH = {"priority_class": "portal-batch",
         "priority_labels": {"kueue.x-k8s.io/priority-class": "portal-batch"}}


def test_its_synced_pods_get_the_kinds_priority_class_which_kueue_reads():
    """The pods a vCluster syncs queue in the tenant's LocalQueue `default` (Kueue's defaulting)
    and cannot carry Kueue's priority label: they get the batch PriorityClass instead."""
    for launch, ctx in ((SHARED, SHARED_BUILD), (DEDICATED, DEDICATED_BUILD)):
        queued = dataclasses.replace(ctx, **BATCH)
        for spec_input in ({}, {"gpu_scheduling": True}):
            objects = manifests(spec_input, launch, queued)
            values = release_of(objects)["spec"]["values"]
            assert values["sync"]["toHost"]["pods"]["priorityClassName"] == "portal-batch"
            # Its control plane is queued too, by Kueue's defaulting, at the same priority.
            assert values["controlPlane"]["statefulSet"]["pods"] == {
                "labels": {"kueue.x-k8s.io/priority-class": "portal-batch"}}
            schemas.check_manifests(objects)
    dedicated = manifests({"gpu_scheduling": True}, DEDICATED,
                          dataclasses.replace(DEDICATED_BUILD, **BATCH))
    assert release_of(dedicated)["spec"]["values"]["sync"]["toHost"]["pods"] == {
        "priorityClassName": "portal-batch",
        "enforceTolerations": [f"{RESERVED_FOR_KEY}=helix:NoSchedule"],
    }


def test_derived_names_stay_valid_for_a_63_character_name_or_a_leading_digit():
    for name in ("a" * 63, "9lives", "x" * 52, f"{'b' * 51}-c"):
        ctx = build(name=name)
        repository, release = KIND.manifests(KIND.validate({}, SHARED), ctx)
        release_name = release["metadata"]["name"]
        assert DNS1035_LABEL.fullmatch(release_name) and len(release_name) <= 52
        assert len(f"{release_name}-headless") <= 63
        assert len(repository["metadata"]["name"]) <= 63
        assert release["spec"]["values"]["exportKubeConfig"]["server"] == (
            f"https://{release_name}.tenant-nova.svc:443"
        )
        schemas.check_manifests([repository, release])
    assert vcluster.release_name("a" * 63) != vcluster.release_name("a" * 62)
    assert vcluster.release_name("x" * 52) == "x" * 52


# Demand ----------------------------------------------------------------------------------------


def test_demand_is_the_control_plane_and_its_volume_never_gpus():
    spec = KIND.validate({"cpu": 3, "memory_gib": 6, "gpu_scheduling": True}, SHARED)

    assert KIND.demand(spec) == {
        "count:vcluster": 1,
        "cpu": 3,
        "memory-gib": 6,
        "storage-gib": vcluster.DATA_VOLUME_GIB,
    }


# Observe ---------------------------------------------------------------------------------------

RELEASE_KEY = ("helm.toolkit.fluxcd.io/v2", "HelmRelease", "dev")
REPOSITORY_KEY = ("source.toolkit.fluxcd.io/v1", "HelmRepository", "dev-charts")
SECRET_KEY = ("v1", "Secret", "vc-dev")
STATEFUL_SET_KEY = ("apps/v1", "StatefulSet", "dev")
KUBECONFIG = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTi==
    server: https://dev.tenant-nova.svc:443
  name: dev
contexts:
- context:
    cluster: dev
    user: dev
  name: dev
current-context: dev
kind: Config
users:
- name: dev
  user:
    client-certificate-data: LS0tLS1CRUdJTi==
    client-key-data: LS0tLS1CRUdJTi==
"""


def cond(kind, status, reason, message, at="2026-11-30T10:02:41Z", generation=1):
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": at,
    }


def snapshot(version, status, at="2026-11-30T10:02:30Z"):
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "name": "dev",
        "namespace": "tenant-nova",
        "version": version,
        "status": status,
        "chartName": "vcluster",
        "chartVersion": "0.36.1",
        "appVersion": "0.36.1",
        "configDigest": "sha256:9b1c2e1f0d8a4bd1d4d0b3e8cda1f4a09a3f8c7f11e0d1c4f2a6b9d3e5f7a1c2",
        "digest": "sha256:52aa0b3b8e8e1c1c7d5b7d5f1f0c6d0e4b2a9f8e7d6c5b4a3f2e1d0c9b8a7f6e",
        "firstDeployed": "2026-11-30T10:02:30Z",
        "lastDeployed": at,
    }


def flux_release(conditions, history=(), generation=1, observed=1, action="install"):
    release = release_of(manifests({}))
    release["metadata"] |= {"generation": generation, "uid": "3b7d1c7e-0f3a-4d3e-9b1e-6c2b5d2f1a00"}
    release["status"] = {
        "conditions": list(conditions),
        "helmChart": "tenant-nova/tenant-nova-dev",
        "history": list(history),
        "lastAttemptedGeneration": generation,
        "lastAttemptedReleaseAction": action,
        "lastAttemptedRevision": "0.36.1",
        "lastAttemptedConfigDigest": "sha256:9b1c2e1f0d8a4bd1",
        "observedGeneration": observed,
        "storageNamespace": "tenant-nova",
    }
    assert schemas.manifest_errors(release) == [], "the status block must be one Flux can write"
    return release


def ready_repository():
    repository = manifests({})[0]
    repository["status"] = {
        "conditions": [
            cond("Ready", "True", "Succeeded", "stored artifact: revision 'sha256:4f0c1a9e'")
        ],
        "observedGeneration": 1,
        "url": "http://source-controller.flux-system.svc.cluster.local./helmrepository/tenant-nova/dev-charts/index.yaml",
    }
    assert schemas.manifest_errors(repository) == []
    return repository


def kubeconfig_secret(config=KUBECONFIG):
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": "vc-dev",
            "namespace": "tenant-nova",
            "labels": {"app": "vcluster", "vcluster-name": "dev"},
        },
        "data": {
            "config": base64.b64encode(config.encode()).decode(),
            "certificate-authority": "LS0tLS1CRUdJTi==",
            "client-certificate": "LS0tLS1CRUdJTi==",
            "client-key": "LS0tLS1CRUdJTi==",
        },
    }


def stateful_set(ready):
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "dev", "namespace": "tenant-nova", "labels": {"app": "vcluster"}},
        "spec": {"replicas": 1, "serviceName": "dev-headless"},
        "status": {"replicas": 1, "readyReplicas": ready, "availableReplicas": ready},
    }


INSTALLED = "Helm install succeeded for release tenant-nova/dev.v1 with chart vcluster@0.36.1"
INSTALLING = "Running 'install' action with timeout of 10m0s"


def installed_release():
    return flux_release(
        [
            cond("Ready", "True", "InstallSucceeded", INSTALLED),
            cond("Released", "True", "InstallSucceeded", INSTALLED),
        ],
        history=[snapshot(1, "deployed")],
    )


def observe(*objects_by_key):
    objects = dict(objects_by_key)
    spec = KIND.validate({}, SHARED)
    return KIND.observe(objects, spec, SHARED_BUILD)


def test_nothing_on_the_cluster_is_absent():
    assert observe().state == "absent"


def test_only_the_repository_is_progressing():
    seen = observe((REPOSITORY_KEY, ready_repository()))

    assert seen.state == "progressing"


def test_an_install_under_way_is_progressing_with_fluxs_words():
    release = flux_release(
        [
            cond("Reconciling", "True", "Progressing", INSTALLING),
            cond("Ready", "Unknown", "Progressing", INSTALLING),
        ]
    )

    seen = observe((REPOSITORY_KEY, ready_repository()), (RELEASE_KEY, release))

    assert (seen.state, seen.reason, seen.message) == ("progressing", "Progressing", INSTALLING)


def test_installed_but_no_kubeconfig_yet_is_progressing():
    seen = observe((RELEASE_KEY, installed_release()))

    assert seen.state == "progressing"
    assert seen.reason == "WaitingForKubeconfig"


def test_installed_with_its_kubeconfig_is_ready_with_figures():
    seen = observe(
        (REPOSITORY_KEY, ready_repository()),
        (RELEASE_KEY, installed_release()),
        (SECRET_KEY, kubeconfig_secret()),
        (STATEFUL_SET_KEY, stateful_set(ready=1)),
    )

    assert (seen.state, seen.reason, seen.message) == ("ready", "InstallSucceeded", INSTALLED)
    assert seen.details["chart_version"] == "0.36.1"
    assert seen.details["helm_revision"] == 1
    assert seen.details["last_attempted_revision"] == "0.36.1"
    assert seen.details["kubeconfig_secret"] == "vc-dev"
    assert seen.details["server"] == "https://dev.tenant-nova.svc:443"
    assert [c["type"] for c in seen.conditions] == ["Ready", "Released"]


def test_a_change_flux_has_not_seen_yet_is_progressing():
    release = installed_release()
    release["metadata"]["generation"] = 2

    seen = observe((RELEASE_KEY, release), (SECRET_KEY, kubeconfig_secret()))

    assert seen.state == "progressing"


def test_a_failed_first_install_flux_gave_up_on_is_failed_with_its_reason():
    failed = (
        "Helm install failed for release tenant-nova/dev with chart vcluster@0.36.1:"
        " context deadline exceeded"
    )
    release = flux_release(
        [
            cond("Stalled", "True", "RetriesExceeded", "Failed to install after 4 attempt(s)"),
            cond("Ready", "False", "InstallFailed", failed),
            cond("Released", "False", "InstallFailed", failed),
            cond(
                "Remediated",
                "True",
                "UninstallSucceeded",
                "Helm uninstall for release tenant-nova/dev.v4 with chart vcluster@0.36.1",
            ),
        ],
        history=[snapshot(4, "uninstalled")],
    )
    release["status"]["installFailures"] = 4

    seen = observe((RELEASE_KEY, release))

    assert (seen.state, seen.reason) == ("failed", "InstallFailed")
    assert seen.message == f"{failed} (Failed to install after 4 attempt(s))"


def test_a_failed_install_flux_retries_is_failed_and_says_it_retries():
    failed = "Helm install failed for release tenant-nova/dev with chart vcluster@0.36.1: boom"
    release = flux_release(
        [
            cond("Reconciling", "True", "ProgressingWithRetry", INSTALLING),
            cond("Ready", "False", "InstallFailed", failed),
        ]
    )

    seen = observe((RELEASE_KEY, release))

    assert (seen.state, seen.reason, seen.message) == ("failed", "InstallFailed", failed)
    assert seen.details["retrying"] is True


def test_a_chart_that_cannot_be_fetched_is_failed():
    missing = (
        "HelmChart 'tenant-nova/tenant-nova-dev' is not ready: invalid chart reference: failed to"
        " get chart version for remote reference: no 'vcluster' chart with version matching"
        " '0.36.1' found"
    )
    release = flux_release([cond("Ready", "False", "ArtifactFailed", missing)])

    seen = observe((RELEASE_KEY, release))

    assert (seen.state, seen.reason, seen.message) == ("failed", "ArtifactFailed", missing)


def test_a_failed_upgrade_over_a_running_release_is_degraded():
    failed = (
        "Helm upgrade failed for release tenant-nova/dev with chart vcluster@0.36.1:"
        " timed out waiting for the condition"
    )
    release = flux_release(
        [
            cond("Reconciling", "True", "ProgressingWithRetry", "Running 'upgrade' action"),
            cond("Ready", "False", "UpgradeFailed", failed, generation=2),
            cond("Released", "False", "UpgradeFailed", failed, generation=2),
        ],
        history=[snapshot(2, "failed", at="2026-11-30T11:00:00Z"), snapshot(1, "deployed")],
        generation=2,
        observed=2,
        action="upgrade",
    )

    seen = observe((RELEASE_KEY, release), (SECRET_KEY, kubeconfig_secret()))

    assert (seen.state, seen.reason, seen.message) == ("degraded", "UpgradeFailed", failed)
    assert seen.details["helm_revision"] == 1


def test_a_control_plane_pod_down_after_install_is_degraded():
    seen = observe(
        (RELEASE_KEY, installed_release()),
        (SECRET_KEY, kubeconfig_secret()),
        (STATEFUL_SET_KEY, stateful_set(ready=0)),
    )

    assert (seen.state, seen.reason) == ("degraded", "ControlPlaneNotReady")
    assert seen.message == "0 of 1 control plane pods ready."


def test_the_machinery_is_told_which_unlabelled_objects_to_read():
    assert KIND.unowned_objects({}, SHARED_BUILD) == (SECRET_KEY, STATEFUL_SET_KEY)


# Kubeconfig and connection ---------------------------------------------------------------------


def test_the_kubeconfig_comes_out_of_the_secret():
    assert vcluster.kubeconfig_from_secret(kubeconfig_secret()) == KUBECONFIG


@pytest.mark.parametrize(
    "secret",
    [
        {"metadata": {"name": "vc-dev"}, "data": {"token": "eA=="}},
        {"metadata": {"name": "vc-dev"}},
        {"data": {"config": "not base64!"}},
        {"data": {"config": base64.b64encode(b"\xff\xfe").decode()}},
        {},
    ],
)
def test_a_secret_without_a_kubeconfig_is_a_clear_value_error(secret):
    with pytest.raises(ValueError, match="config"):
        vcluster.kubeconfig_from_secret(secret)


def test_connection_says_how_to_download_and_use_the_kubeconfig():
    objects = {RELEASE_KEY: installed_release(), SECRET_KEY: kubeconfig_secret()}

    connection = KIND.connection(objects, KIND.validate({}, SHARED), SHARED_BUILD)

    items = dict(connection.items)
    commands = dict(connection.commands)
    assert items["API server (in-cluster)"] == "https://dev.tenant-nova.svc:443"
    assert items["Kubeconfig Secret"] == "vc-dev (key config)"
    assert commands["Download the kubeconfig"] == (
        "kubectl -n tenant-nova get secret vc-dev -o jsonpath='{.data.config}'"
        " | base64 -d > vcluster-dev.yaml"
    )
    assert commands["Use it"] == "kubectl --kubeconfig vcluster-dev.yaml get namespaces"
    assert commands["Connect from outside the cluster"] == "vcluster connect dev -n tenant-nova"
    assert commands["Or forward a local port"] == (
        "kubectl -n tenant-nova port-forward svc/dev 8443:443"
    )
    assert "https://localhost:8443" in commands["…and use the forwarded port"]
    assert any("in-cluster Service" in note for note in connection.notes)


# Scale -----------------------------------------------------------------------------------------


def running(**fields):
    return KIND.validate(fields, SHARED)


def test_scale_resizes_the_control_plane_and_switches_gpu_scheduling():
    spec = KIND.scale(running(), {"cpu": 4, "memory_gib": 8, "gpu_scheduling": True}, SHARED)

    assert spec == {"kubernetes_version": "1.35", "gpu_scheduling": True, "cpu": 4, "memory_gib": 8}


def test_scale_upgrades_kubernetes_one_minor_at_a_time():
    assert (
        KIND.scale(running(kubernetes_version="1.34"), {"kubernetes_version": "1.35"}, SHARED)[
            "kubernetes_version"
        ]
        == "1.35"
    )
    with pytest.raises(SpecError) as skipped:
        KIND.scale(running(kubernetes_version="1.34"), {"kubernetes_version": "1.36"}, SHARED)
    assert skipped.value.fields == {
        "kubernetes_version": ["Upgrade one minor version at a time: 1.35 first."]
    }


def test_scale_never_downgrades_kubernetes():
    with pytest.raises(SpecError) as down:
        KIND.scale(running(kubernetes_version="1.36"), {"kubernetes_version": "1.35"}, SHARED)

    (message,) = down.value.fields["kubernetes_version"]
    assert "can't be downgraded" in message


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "other"}, "name"),
        ({"cpu": 0}, "cpu"),
        ({"memory_gib": 129}, "memory_gib"),
        ({"gpu_scheduling": "maybe"}, "gpu_scheduling"),
    ],
)
def test_scale_refuses_other_changes_and_bad_sizes(changes, field):
    with pytest.raises(SpecError) as refused:
        KIND.scale(running(), changes, SHARED)

    assert field in refused.value.fields


def test_scale_to_gpu_scheduling_needs_gpu_quota():
    with pytest.raises(SpecError) as refused:
        KIND.scale(running(), {"gpu_scheduling": True}, NO_GPUS)

    assert "no GPU quota" in refused.value.fields["gpu_scheduling"][0]


# Bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec_input", "field"),
    [
        ({"kubernetes_version": "1.29"}, "kubernetes_version"),
        ({"kubernetes_version": 1.35}, "kubernetes_version"),
        ({"kubernetes_version": "\uff11.\uff13\uff15"}, "kubernetes_version"),
        ({"cpu": 0}, "cpu"),
        ({"cpu": -2}, "cpu"),
        ({"cpu": 33}, "cpu"),
        ({"cpu": 2.5}, "cpu"),
        ({"cpu": True}, "cpu"),
        ({"cpu": "²"}, "cpu"),
        ({"cpu": "٣"}, "cpu"),
        ({"cpu": "--5"}, "cpu"),
        ({"cpu": "9" * 5000}, "cpu"),
        ({"cpu": 10**100}, "cpu"),
        ({"memory_gib": 0}, "memory_gib"),
        ({"memory_gib": [4]}, "memory_gib"),
        ({"gpu_scheduling": "sometimes"}, "gpu_scheduling"),
        ({"gpu_scheduling": 1}, "gpu_scheduling"),
        ({"gpu_scheduling": True}, "gpu_scheduling"),  # no GPU quota in NO_GPUS
        ({"replicas": 3}, "__all__"),
    ],
)
def test_bad_input_is_a_field_error(spec_input, field):
    with pytest.raises(SpecError) as refused:
        KIND.validate(spec_input, NO_GPUS)

    assert field in refused.value.fields


@pytest.mark.parametrize("spec_input", [None, [], "cpu=2", 7])
def test_a_spec_that_is_not_an_object_is_refused(spec_input):
    with pytest.raises(SpecError) as refused:
        KIND.validate(spec_input, SHARED)

    assert "__all__" in refused.value.fields


def test_every_bad_field_is_named_at_once():
    with pytest.raises(SpecError) as refused:
        KIND.validate({"cpu": 0, "memory_gib": 0, "kubernetes_version": "2.0"}, SHARED)

    assert set(refused.value.fields) == {"cpu", "memory_gib", "kubernetes_version"}


def test_mig_quota_alone_does_not_let_a_dedicated_tenant_schedule_gpus():
    with pytest.raises(SpecError) as refused:
        KIND.validate({"gpu_scheduling": True}, MIG_ONLY_DEDICATED)

    assert "gpu_scheduling" in refused.value.fields


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)

NEAR_VALID = {
    "kubernetes_version": st.sampled_from([*vcluster.SUPPORTED_VERSIONS, "v1.36", "1.33", ""]),
    "gpu_scheduling": st.sampled_from([True, False, "true", "off", "maybe"]),
    "cpu": st.integers(-1, 40) | st.integers(-1, 40).map(str),
    "memory_gib": st.integers(-1, 140) | st.integers(-1, 140).map(str),
}
JUNK_SPECS = st.one_of(
    JUNK,
    st.fixed_dictionaries(
        {},
        optional={
            **{
                name: st.one_of(NEAR_VALID[name], NEAR_VALID[name], JUNK)
                for name in vcluster.FIELDS
            },
            "extra": JUNK,
        },
    ),
)


@given(JUNK_SPECS, st.sampled_from([SHARED, DEDICATED, NO_GPUS]))
def test_junk_specs_only_ever_raise_spec_errors(spec_input, launch):
    try:
        spec = KIND.validate(spec_input, launch)
    except SpecError:
        return
    ctx = DEDICATED_BUILD if launch is DEDICATED else SHARED_BUILD
    built = KIND.manifests(spec, ctx)
    schemas.check_manifests(built)
    assert schemas.values_errors("vcluster", release_of(built)["spec"]["values"]) == []
    assert KIND.demand(spec)["count:vcluster"] == 1


@given(st.dictionaries(st.sampled_from(vcluster.FIELDS) | st.text(max_size=5), JUNK, max_size=4))
def test_junk_changes_only_ever_raise_spec_errors(changes):
    try:
        spec = KIND.scale(running(), changes, SHARED)
    except SpecError:
        return
    assert set(spec) == set(vcluster.FIELDS)
