"""SSH from a laptop: a LoadBalancer Service per VM (and the Slurm LoginSet's own Service made
one), checked against Kubernetes' and Slinky's schemas; the tenant's NetworkPolicy admits port
22 from the configured ranges; the connection shows `ssh user@<external address>` once the load
balancer gave one, and says it waits until then."""

import dataclasses

import pytest

from tenants.enforcement.manifests import TenantSpec, tenant_manifests
from tenants.workloads.kinds import slurm, vm
from tenants.workloads.kinds.base import BuildContext, ExternalAccess
from tenants.workloads.kinds.schemas import check_manifests
from tenants.workloads.kinds.ssh_access import external_address
from tests.support.manifest_schemas import schema_errors

from .test_kind_slurm import asked as slurm_asked
from .test_kind_slurm import launch as slurm_launch
from .test_kind_vm import RUNNING_READY, VM, VMI, clean, cluster_vmi

PUBLISHED = ExternalAccess(ssh_load_balancer=True)
OFFICE = ExternalAccess(ssh_load_balancer=True, ssh_sources=("198.51.100.0/24",))


def build(kind, name, access=PUBLISHED, workload_id=42):
    return BuildContext(workload_id=workload_id, name=name, kind=kind, tenant_slug="acme",
                        namespace="tenant-acme", isolation="shared", access=access)


def service_with(address, name="train-box-ssh"):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "status": {"loadBalancer": {"ingress": [{"ip": address}]}}}


# VMs -------------------------------------------------------------------------------------------


def test_a_vm_gets_a_load_balancer_service_on_port_22():
    built = vm.KIND.manifests(clean(), build("vm", "train-box"))

    check_manifests(built)
    (service,) = [m for m in built if m["kind"] == "Service"]
    assert schema_errors(service) == []
    assert service["metadata"]["name"] == "train-box-ssh"
    assert service["metadata"]["namespace"] == "tenant-acme"
    assert service["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "42"
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["externalTrafficPolicy"] == "Local"
    assert service["spec"]["ports"] == [
        {"name": "ssh", "protocol": "TCP", "port": 22, "targetPort": 22}
    ]
    # The launcher pod carries the template's labels: the selector picks this VM's pod only.
    (machine,) = [m for m in built if m["kind"] == "VirtualMachine"]
    pod_labels = machine["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert "loadBalancerSourceRanges" not in service["spec"]  # anywhere by default


def test_source_ranges_restrict_the_service():
    built = vm.KIND.manifests(clean(), build("vm", "train-box", OFFICE))

    (service,) = [m for m in built if m["kind"] == "Service"]
    assert service["spec"]["loadBalancerSourceRanges"] == ["198.51.100.0/24"]
    assert schema_errors(service) == []


def test_without_the_load_balancer_a_vm_has_no_service():
    built = vm.KIND.manifests(clean(), build("vm", "train-box", ExternalAccess()))

    assert [m["kind"] for m in built] == ["VirtualMachine"]


def test_the_connection_gives_the_ssh_command_to_the_external_address():
    objects = {VM: RUNNING_READY, VMI: cluster_vmi(),
               ("v1", "Service", "train-box-ssh"): service_with("203.0.113.40")}

    reached = vm.KIND.connection(objects, clean(), build("vm", "train-box"))

    assert reached.items[:2] == (("SSH address", "203.0.113.40"), ("IP address", "10.244.3.17"))
    assert reached.commands[0] == ("SSH from your machine", "ssh ubuntu@203.0.113.40")
    # The in-cluster ways in stay.
    assert ("SSH from a pod of your namespace or vCluster", "ssh ubuntu@10.244.3.17") in (
        reached.commands
    )
    assert not any("No Service is created" in note for note in reached.notes)


def test_before_the_load_balancer_answers_the_page_says_it_waits():
    objects = {VM: RUNNING_READY, VMI: cluster_vmi(),
               ("v1", "Service", "train-box-ssh"): {"metadata": {"name": "train-box-ssh"}}}

    reached = vm.KIND.connection(objects, clean(), build("vm", "train-box"))

    assert "SSH address" not in dict(reached.items)
    assert not any(label == "SSH from your machine" for label, _ in reached.commands)
    assert "train-box-ssh has no external address yet" in reached.notes[0]


@pytest.mark.parametrize(
    ("status", "address"),
    [
        ({"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}, "203.0.113.7"),
        ({"loadBalancer": {"ingress": [{"hostname": "lb-1.example.com"}]}}, "lb-1.example.com"),
        ({"loadBalancer": {}}, ""),
        (None, ""),
    ],
)
def test_the_external_address_is_an_ip_or_a_hostname(status, address):
    assert external_address({"status": status} if status else {}) == address


# Slurm login nodes -----------------------------------------------------------------------------


def slurm_build(access=PUBLISHED):
    return build("slurm", "train", access, workload_id=7)


def test_the_login_sets_service_is_a_load_balancer_carrying_the_owner_labels():
    ctx = slurm_build(OFFICE)
    built = slurm.KIND.manifests(slurm.KIND.validate(slurm_asked(), slurm_launch()), ctx)

    check_manifests(built)
    (login,) = [m for m in built if m["kind"] == "LoginSet"]
    assert login["spec"]["service"] == {
        "metadata": {"labels": ctx.labels},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                 "loadBalancerSourceRanges": ["198.51.100.0/24"]},
    }


def test_without_the_load_balancer_the_login_node_stays_in_cluster():
    ctx = slurm_build(ExternalAccess())
    built = slurm.KIND.manifests(slurm.KIND.validate(slurm_asked(), slurm_launch()), ctx)

    (login,) = [m for m in built if m["kind"] == "LoginSet"]
    assert login["spec"]["service"] == {"spec": {"type": "ClusterIP"}}


def test_the_slurm_connection_gives_ssh_to_the_login_nodes_address():
    ctx = slurm_build()
    login = slurm.Names(ctx).login
    objects = {("v1", "Service", login): service_with("203.0.113.9", login)}

    reached = slurm.KIND.connection(objects, slurm.KIND.validate(slurm_asked(), slurm_launch()),
                                    ctx)

    assert dict(reached.items)["SSH address"] == "203.0.113.9 port 22"
    assert reached.commands[0] == ("SSH from your machine", "ssh root@203.0.113.9")
    assert "load balancer" in reached.notes[0]


def test_the_slurm_connection_waits_for_the_address():
    ctx = slurm_build()
    reached = slurm.KIND.connection({}, slurm.KIND.validate(slurm_asked(), slurm_launch()), ctx)

    assert "SSH address" not in dict(reached.items)
    assert "has no external address yet" in reached.notes[0]


# The tenant's NetworkPolicy --------------------------------------------------------------------

TENANT = TenantSpec(slug="acme", isolation="shared")


def policy(spec):
    (found,) = [m for m in tenant_manifests(spec) if m["kind"] == "NetworkPolicy"]
    return found


def test_the_network_policy_admits_ssh_from_the_configured_ranges_only_on_port_22():
    found = policy(dataclasses.replace(TENANT, ssh_sources=("0.0.0.0/0", "::/0")))

    assert schema_errors(found) == []
    rule = found["spec"]["ingress"][-1]
    assert rule == {
        "from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}],
        "ports": [{"protocol": "TCP", "port": 22}],
    }


def test_without_ssh_from_outside_the_policy_has_no_ip_block():
    found = policy(TENANT)

    assert not any("ipBlock" in peer for rule in found["spec"]["ingress"]
                   for peer in rule["from"])
