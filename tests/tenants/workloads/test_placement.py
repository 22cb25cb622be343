"""Issue 34, item 4: a launch picks a cluster. The options are the clusters that take new work
where the tenant has quota and its pool holds the GPU class; the portal's choice is the tenant's
reserved nodes first, then the most free room; none is a field error naming why."""

import pytest
from django.core.exceptions import ValidationError

from inventory.models import Cluster, Node
from tenants.access.models import Tenant
from tenants.workloads import services
from tenants.workloads.models import NotebookImage, Workload
from tenants.workloads.placement import placement_options
from tests.factories import GPUFactory, NodeFactory, SiteFactory

from .conftest import H100, INFERENCE_SPEC

A100 = "gpu:nvidia-a100-80gb"


@pytest.fixture
def second_cluster(db):
    return Cluster.objects.create(slug="west", name="West", site=SiteFactory(slug="fra",
                                                                             name="Frankfurt"))


def _gpu_nodes(cluster: str, *, nodes: int = 1, gpus: int = 8, model: str = "nvidia-h100-80gb",
               reserved_for: str = "", busy: int = 0) -> list[Node]:
    """`nodes` available nodes of `gpus` GPUs on `cluster`; `busy` GPUs in use on each (as the
    last cluster sync saw pods ask)."""
    made = []
    for _ in range(nodes):
        node = NodeFactory(cluster_id=cluster, reserved_for=reserved_for, gpus_in_use=busy)
        for index in range(gpus):
            GPUFactory(node=node, index=index, model=model)
        made.append(node)
    return made


def _launch(tenant, who, name, *, gpus=1, cluster=None, gpu=H100):
    spec = {**INFERENCE_SPEC, "gpu": gpu, "gpus_per_replica": gpus, "min_replicas": 1,
            "max_replicas": 1}
    return services.workload_launch(tenant=tenant, actor=who, kind="inference", name=name,
                                    spec=spec, cluster=cluster)


def test_the_only_cluster_holding_the_gpu_is_chosen(tenant, tenant_member, workload_quota,
                                                    second_cluster):
    workload_quota(**{H100: 8})
    _gpu_nodes("west")
    _gpu_nodes("main", model="nvidia-a100-80gb")

    workload = _launch(tenant, tenant_member, "chat")

    assert workload.cluster_id == "west"
    placement = placement_options(tenant=tenant, demand={H100: 1})
    assert [o.cluster for o in placement.options] == ["west"]
    assert placement.refused == (
        ("main", "Main cluster", "no NVIDIA H100 80GB HBM3 GPUs on the shared pool"),
    )


def test_with_room_on_both_the_most_free_wins(tenant, tenant_member, workload_quota,
                                              second_cluster):
    workload_quota(**{H100: 8})
    _gpu_nodes("main", busy=6)  # 2 free
    _gpu_nodes("west", busy=0)  # 8 free

    assert _launch(tenant, tenant_member, "chat", gpus=2).cluster_id == "west"

    placement = placement_options(tenant=tenant, demand={H100: 2})
    rooms = {o.cluster: (o.rooms[0].free, o.fits) for o in placement.options}
    # The endpoint just placed holds 2 on west, though no sync has seen its pods yet.
    assert rooms == {"west": (6, True), "main": (2, True)}
    assert placement.choice.cluster == "west"


def test_a_cluster_where_it_fits_comes_before_a_full_one(tenant, workload_quota,
                                                         second_cluster):
    workload_quota(**{H100: 8})
    _gpu_nodes("main", busy=7)  # 1 free
    _gpu_nodes("west", nodes=2, gpus=2, busy=0)  # 4 free, on smaller nodes

    placement = placement_options(tenant=tenant, demand={H100: 2})
    assert [o.cluster for o in placement.options] == ["west", "main"]
    placement = placement_options(tenant=tenant, demand={H100: 6})
    # Full everywhere: both are still options (the workload waits for room), the roomier first.
    assert [(o.cluster, o.fits) for o in placement.options] == [("west", False), ("main", False)]
    assert "full now" in placement.choice.room_label


def test_a_dedicated_tenant_goes_to_its_reserved_nodes(tenant, tenant_member, workload_quota,
                                                       second_cluster):
    Tenant.objects.filter(pk=tenant.pk).update(isolation=Tenant.Isolation.DEDICATED)
    tenant.refresh_from_db()
    workload_quota(**{H100: 8})
    _gpu_nodes("main", reserved_for="acme", busy=4)  # 4 free, its own
    _gpu_nodes("west", nodes=2)  # 16 free, shared: its pods do not tolerate these nodes

    workload = _launch(tenant, tenant_member, "chat", gpus=2)

    assert workload.cluster_id == "main"
    placement = placement_options(tenant=tenant, demand={H100: 2})
    assert [(o.cluster, o.dedicated) for o in placement.options] == [("main", True)]
    assert "free on your reserved nodes" in placement.choice.room_label


def test_reserved_room_where_it_fits_comes_before_more_room(tenant, workload_quota,
                                                            second_cluster):
    Tenant.objects.filter(pk=tenant.pk).update(isolation=Tenant.Isolation.DEDICATED)
    tenant.refresh_from_db()
    workload_quota(**{H100: 8})
    _gpu_nodes("main", reserved_for="acme", busy=6)  # 2 free
    _gpu_nodes("west", reserved_for="acme", busy=0)  # 8 free

    assert placement_options(tenant=tenant, demand={H100: 2}).choice.cluster == "west"
    assert placement_options(tenant=tenant, demand={H100: 4}).choice.cluster == "west"


def test_no_cluster_with_the_gpu_is_a_field_error_naming_why(tenant, tenant_member,
                                                              workload_quota, second_cluster):
    workload_quota(**{H100: 8})
    _gpu_nodes("main")
    second_cluster.state = Cluster.State.DRAINING
    second_cluster.save()
    Cluster.objects.filter(slug="main").update(reachable=False)

    with pytest.raises(ValidationError) as refused:
        _launch(tenant, tenant_member, "chat", gpus=4)

    message = refused.value.message_dict["cluster"][0]
    assert message.startswith("No cluster has room for 4 NVIDIA H100 80GB HBM3 GPUs now: ")
    assert "Main cluster: unreachable" in message
    assert "West: draining, it takes no new work" in message
    assert not Workload.objects.exists()


def test_quota_granted_nowhere_near_is_no_option(tenant, workload_quota, second_cluster):
    workload_quota()
    _gpu_nodes("main")
    placement = placement_options(tenant=tenant, demand={H100: 1, A100: 1})
    assert placement.options == ()
    why = "not enough quota for NVIDIA A100 SXM4 80GB GPUs"
    assert ("main", "Main cluster", why) in placement.refused


def test_a_workload_without_gpus_goes_to_any_cluster_with_quota(tenant, tenant_member,
                                                                  workload_quota,
                                                                  second_cluster):
    workload_quota()
    placement = placement_options(tenant=tenant, demand={"cpu": 2, "memory-gib": 4,
                                                         "count:vcluster": 1})
    assert {o.cluster for o in placement.options} == {"main", "west"}
    assert all(o.room_label == "no GPUs asked" for o in placement.options)


def test_the_tenant_may_pick_an_option(tenant, tenant_member, workload_quota, second_cluster):
    workload_quota(**{H100: 8})
    _gpu_nodes("main", busy=6)
    _gpu_nodes("west")

    assert _launch(tenant, tenant_member, "chat", cluster="main").cluster_id == "main"


@pytest.mark.parametrize("cluster", ["west", "nowhere"])
def test_picking_a_cluster_that_is_no_option_is_refused(tenant, tenant_member, workload_quota,
                                                        second_cluster, cluster):
    workload_quota(**{H100: 8})
    _gpu_nodes("main")  # west has no H100 at all

    with pytest.raises(ValidationError) as refused:
        _launch(tenant, tenant_member, "chat", cluster=cluster)

    message = refused.value.message_dict["cluster"][0]
    assert message.startswith(f"“{cluster}” is not a cluster this launch may go to")
    assert message.endswith("pick one of: main.")
    assert not Workload.objects.exists()


def test_placement_reads_a_fixed_number_of_queries(tenant, workload_quota, second_cluster,
                                                   django_assert_num_queries):
    workload_quota(**{H100: 8})
    for cluster in ("main", "west"):
        _gpu_nodes(cluster, nodes=3)
    with django_assert_num_queries(6):
        placement_options(tenant=tenant, demand={H100: 1})
    Cluster.objects.create(slug="east", name="East")
    _gpu_nodes("east", nodes=4)
    with django_assert_num_queries(6):
        assert len(placement_options(tenant=tenant, demand={H100: 1}).options) == 3


def test_a_notebook_follows_its_persons_home_volume(tenant, tenant_member, workload_quota,
                                                    second_cluster, settings):
    settings.NOTEBOOK_HOME_ACCESS_MODE = "ReadWriteMany"
    workload_quota(**{"count:notebook": 4, "storage-gib": 1000})
    NotebookImage.objects.create(key="pytorch", label="PyTorch", interface="jupyterlab",
                                 image="quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10")

    def notebook(name, cluster=None):
        return services.workload_launch(tenant=tenant, actor=tenant_member, kind="notebook",
                                        name=name, spec={"image": "pytorch"}, cluster=cluster)

    first = notebook("first", cluster="west")
    services.workload_delete(workload_id=first.pk, actor=tenant_member)
    # Its home volume outlives it, on west: the portal puts the next one there too.
    assert notebook("second").cluster_id == "west"

    second_cluster.state = Cluster.State.DRAINING
    second_cluster.save()
    with pytest.raises(ValidationError) as refused:
        notebook("third")
    assert refused.value.message_dict["cluster"][0].startswith(
        "Your home volume is on cluster “west”: “west” is not a cluster this launch may go to")
    assert notebook("elsewhere", cluster="main").cluster_id == "main"  # picked by the person


def test_quota_granted_on_one_cluster_places_there_until_what_it_holds_there_uses_it(
    tenant, tenant_member, workload_quota, second_cluster
):
    workload_quota(**{H100: 0})
    tenant.quotas.create(resource=H100, limit=2, cluster_id="west")
    for cluster in ("main", "west"):
        _gpu_nodes(cluster, nodes=2)  # "main" has as much room: only the quota decides

    first = _launch(tenant, tenant_member, "chat-a", gpus=2)

    assert first.cluster_id == "west"
    placement = placement_options(tenant=tenant, demand={H100: 1})
    assert placement.options == ()
    assert {slug: why for slug, _, why in placement.refused} == {
        "main": "not enough quota for NVIDIA H100 80GB HBM3 GPUs",
        "west": "not enough quota for NVIDIA H100 80GB HBM3 GPUs",
    }
    with pytest.raises(ValidationError) as refused:
        _launch(tenant, tenant_member, "chat-b", gpus=1)
    assert "quota" in refused.value.message_dict
    assert Workload.objects.filter(tenant=tenant).count() == 1
