"""The simulated fleet's load balancer: a LoadBalancer Service (a VM's SSH Service, the Slurm
login node's, which the simulated Slinky operator makes from the LoginSet) gets an address of
the simulated pool, so the demo's pages show an `ssh` command that looks like a real one; and
the kinds read it back into their connection. Its Gateway accepts a vCluster's TLSRoute."""

import dataclasses

from demo.fleet.simulated_controllers import LOAD_BALANCER_POOL
from tenants.workloads.kinds import slurm, vcluster, vm
from tenants.workloads.kinds.base import ExternalAccess
from tenants.workloads.kinds.schemas import manifest_errors
from tenants.workloads.kinds.vcluster import access
from tests.support.manifest_schemas import schema_errors

from .test_fleet_simulated import LAUNCH, SLURM_SPEC, VM_SPEC, build

READ = {"api_version": "v1", "kind": "Service", "namespace": "tenant-acme"}
PUBLISHED = ExternalAccess(ssh_load_balancer=True)


def published(kind: str, name: str):
    return dataclasses.replace(build(kind, name), access=PUBLISHED)


def test_a_vms_ssh_service_gets_an_address_of_the_pool(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    ctx = published("vm", "box")
    spec = vm.KIND.validate(VM_SPEC, LAUNCH)
    simulated_gateway.apply(manifests=vm.KIND.manifests(spec, ctx))

    service = simulated_gateway.get(name="box-ssh", **READ)

    (ingress,) = service["status"]["loadBalancer"]["ingress"]
    assert ingress["ip"].startswith(f"{LOAD_BALANCER_POOL}.")
    assert schema_errors({**service, "metadata": {"name": "box-ssh"}}) == []  # status too
    # Stable: read again, the same address.
    assert simulated_gateway.get(name="box-ssh", **READ)["status"] == service["status"]
    reached = vm.KIND.connection({("v1", "Service", "box-ssh"): service}, spec, ctx)
    assert ("SSH from your machine", f"ssh ubuntu@{ingress['ip']}") in reached.commands


def test_the_slinky_operator_makes_the_login_service_from_the_loginset(simulated_gateway,
                                                                       settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    ctx = published("slurm", "train")
    spec = slurm.KIND.validate({**SLURM_SPEC, "ssh_public_key": VM_SPEC["ssh_public_key"]},
                               LAUNCH)
    simulated_gateway.apply(manifests=slurm.KIND.manifests(spec, ctx))
    simulated_gateway.list(api_version=slurm.SLINKY, kind="LoginSet", namespace="tenant-acme")

    service = simulated_gateway.get(name="train-login", **READ)

    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["ports"][0]["port"] == 22
    assert service["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "7"
    assert service["metadata"]["ownerReferences"][0]["kind"] == "LoginSet"
    address = service["status"]["loadBalancer"]["ingress"][0]["ip"]
    reached = slurm.KIND.connection({("v1", "Service", "train-login"): service}, spec, ctx)
    assert reached.commands[0] == ("SSH from your machine", f"ssh root@{address}")


def test_a_cluster_ip_service_gets_no_address(simulated_gateway):
    simulated_gateway.apply(manifests=[{
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "inside", "namespace": "tenant-acme"},
        "spec": {"type": "ClusterIP", "ports": [{"port": 80}]},
    }])

    assert simulated_gateway.get(name="inside", **READ)["status"] == {"loadBalancer": {}}


def test_the_gateway_accepts_a_vclusters_route(simulated_gateway, settings):
    ctx = dataclasses.replace(build("vcluster", "dev"), access=ExternalAccess(
        vcluster_domain="vc.example.com", oidc_issuer="https://sso.example.com/realms/x",
        oidc_client_id="kubernetes"))
    spec = vcluster.KIND.validate({}, LAUNCH)
    simulated_gateway.apply(manifests=vcluster.KIND.manifests(spec, ctx))

    route = simulated_gateway.get(api_version="gateway.networking.k8s.io/v1", kind="TLSRoute",
                                  name="dev", namespace="tenant-acme")

    assert manifest_errors({**route, "metadata": {"name": "dev"}}) == []
    (parent,) = route["status"]["parents"]
    assert parent["parentRef"]["sectionName"] == "tls-passthrough"
    assert {c["type"]: c["status"] for c in parent["conditions"]} == {
        "Accepted": "True", "ResolvedRefs": "True"}
    assert access.route_problem(route) == ""
