"""Each kind names the pods holding its GPUs (`gpu_pods`): DCGM labels each GPU's series by pod,
so a workload's GPUs are read from the series of these pods, and of no other workload's."""

import re

import pytest

from tenants.workloads.kinds.base import BuildContext
from tenants.workloads.registry import KINDS


def _pattern(kind: str, name: str) -> re.Pattern[str]:
    ctx = BuildContext(workload_id=1, name=name, kind=kind, tenant_slug="acme",
                       namespace="tenant-acme", isolation="shared")
    return re.compile(KINDS[kind].module.gpu_pods({}, ctx))


@pytest.mark.parametrize(("kind", "mine", "not_mine"), [
    # KServe's Standard mode: Deployment llama-predictor, ReplicaSet hash, pod suffix.
    ("inference", ["llama-predictor-7d9c8b6f5-x2k4p"],
     ["llama-big-predictor-7d9c8b6f5-x2k4p", "llama-predictor", "llama-transformer-7d9-x2k4p"]),
    # KubeVirt's launcher pod of the VMI named after the VM.
    ("vm", ["virt-launcher-llama-8xq2z"], ["virt-launcher-other-8xq2z", "llama-8xq2z"]),
    # Slinky's NodeSet <name>-workers scales like a StatefulSet.
    ("slurm", ["llama-workers-0", "llama-workers-12"],
     ["llama-workers-abc", "llama-login-0", "llama-big-workers-0"]),
    # vCluster's synced pods: <pod>-x-<namespace inside>-x-<release>.
    ("vcluster", ["trainer-0-x-team-a-x-llama", "job-abc12-x-default-x-llama"],
     ["trainer-0-x-team-a-x-llama-2", "llama-0", "trainer-x-llama"]),
])
def test_a_kinds_gpu_pods_are_its_own(kind, mine, not_mine):
    pattern = _pattern(kind, "llama")
    assert [name for name in mine if pattern.fullmatch(name)] == mine
    assert [name for name in not_mine if pattern.fullmatch(name)] == []

