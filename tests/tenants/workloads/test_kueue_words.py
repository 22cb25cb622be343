"""Kueue's words read for people (tenants/workloads/kinds/kueue.py): pure functions."""

import pytest

from tenants.workloads.kinds import kueue


@pytest.mark.parametrize(("number", "words"), [
    (1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"), (13, "13th"),
    (21, "21st"), (102, "102nd"), (111, "111th"),
])
def test_positions_are_ordinals(number, words):
    assert kueue.ordinal(number) == words


def test_every_shortage_kueue_names_is_read_with_its_flavor():
    message = (
        "couldn't assign flavors to pod set main: insufficient unused quota in cohort for "
        "nvidia.com/gpu in flavor h100, 3 more needed; insufficient quota for "
        "nvidia.com/mig-1g.10gb in flavor a100-mig in ClusterQueue; borrowing limit for "
        "nvidia.com/gpu in flavor h200 exceeded"
    )
    assert kueue.shortages(message) == [
        kueue.Shortage("nvidia.com/gpu", "h100", 3, False),
        kueue.Shortage("nvidia.com/mig-1g.10gb", "a100-mig", None, False),
        kueue.Shortage("nvidia.com/gpu", "h200", None, True),
    ]


def _pending(message, gpus=1, resource="nvidia.com/mig-1g.10gb", pods=2):
    return {"metadata": {"name": "pod-x"}, "spec": {"podSets": [{
        "name": "main", "count": pods, "template": {"spec": {"containers": [
            {"name": "a", "resources": {"limits": {resource: str(gpus)}}}]}}}]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False",
                                   "message": message}]}}


def test_a_partition_waits_for_instances_and_a_reached_borrowing_limit_is_said():
    details = kueue.queue_details(
        pending=[_pending("borrowing limit for nvidia.com/mig-1g.10gb in flavor a100 exceeded")],
        positions=[{"positionInLocalQueue": 0, "positionInClusterQueue": 3}],
        resource_class="mig:nvidia-a100-80gb:1g.10gb", nominal=1, in_use=1, in_cohort=True,
    )
    assert details["gpus"] == 2  # two pods of one instance each
    assert details["position_in_cluster_queue"] == 4
    assert details["summary"] == (
        "1st in the queue · waits for 2 NVIDIA A100 SXM4 80GB MIG 1g.10gb instances "
        "(flavor a100) · the cohort's borrowing limit is reached")


def test_a_dedicated_tenant_never_borrows():
    details = kueue.queue_details(
        pending=[_pending("", resource="nvidia.com/gpu")], positions=None,
        resource_class="gpu:nvidia-h100-80gb", nominal=0, in_use=0, in_cohort=False)
    assert details["would_borrow"] == 0
    assert details["summary"] == (
        "position in the queue unknown · waits for 2 NVIDIA H100 80GB HBM3 GPUs")


def test_a_vm_waits_for_its_passthrough_gpus_counted_as_its_class():
    resource = "nvidia.com/GH100_H100_SXM5_80GB"
    message = (f"couldn't assign flavors to pod set main: insufficient unused quota for "
               f"{resource} in flavor gpu-passthrough, 1 more needed")
    details = kueue.queue_details(
        pending=[_pending(message, gpus=2, resource=resource, pods=1)],
        positions=[{"positionInLocalQueue": 1, "positionInClusterQueue": 1}],
        resource_class="gpu:nvidia-h100-80gb", nominal=4, in_use=3, in_cohort=True)

    assert details["gpus"] == 2  # one launcher pod, two GPUs passed through
    assert details["flavor"] == "gpu-passthrough"
    assert details["summary"] == (
        "2nd in the queue · waits for 2 NVIDIA H100 80GB HBM3 GPUs (flavor gpu-passthrough) · "
        "would borrow 1 from the cohort")


def test_hami_shares_beyond_the_queues_capacity_are_shares_not_gpus_and_borrow_nothing():
    message = ("couldn't assign flavors to pod set main: insufficient quota for "
               "nvidia.com/gpumem in flavor hami-nvidia-l40s, previously considered podsets "
               "requests (0) + current podset request (65536) > maximum capacity (49152)")
    details = kueue.queue_details(
        pending=[_pending(message, resource="nvidia.com/gpu")], positions=None,
        resource_class="hami:nvidia-l40s", nominal=0, in_use=0, in_cohort=True)
    assert (details["gpus"], details["would_borrow"], details["flavor"]) == (
        0, 0, "hami-nvidia-l40s")
    assert details["summary"] == (
        "position in the queue unknown · waits for 2 NVIDIA L40S HAMi shares "
        "(flavor hami-nvidia-l40s)")


def test_an_eviction_by_preemption_names_the_preemptor_and_anything_else_is_none():
    message = ("Preempted to accommodate a workload (UID: 5f0f-aa, JobUID: 77-bb) due to "
               "prioritization in the ClusterQueue")
    evicted = {"metadata": {"name": "pod-chat-0"}, "status": {"conditions": [
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": message,
         "lastTransitionTime": "2026-12-06T10:00:00Z"}]}}
    found = kueue.preemption(evicted)
    assert (found.preemptor_uid, found.preemptor_job_uid, found.reason) == (
        "5f0f-aa", "77-bb", "Preempted")
    assert found.key == "Kueue Workload pod-chat-0, 2026-12-06T10:00:00Z"
    deactivated = {"status": {"conditions": [
        {"type": "Evicted", "status": "True", "reason": "Deactivated", "message": "x"}]}}
    assert kueue.preemption(deactivated) is None
