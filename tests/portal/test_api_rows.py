"""RowSerializerMixin and ChoiceLabelField (portal.api.fields) answer exactly what DRF's own
serializers answer, on the API's lists and on the edge cases of DRF's reading of a row."""

import datetime
import zoneinfo
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from inventory.api.serializers import NodeListSerializer
from inventory.api.views import NODE_API_LIST
from inventory.selectors.nodes import nodes_for_list
from portal.api.fields import ChoiceLabelField, RowSerializerMixin
from tenants.access.serializers import TenantSerializer
from tenants.models import Tenant
from tenants.quota.models import QuotaRequest, QuotaRequestLine
from tenants.quota.selectors import quota_requests_listed_to, quota_requests_visible_to
from tenants.quota.serializers import QuotaRequestSerializer
from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.selectors import workloads_listed_to, workloads_visible_to
from tenants.workloads.serializers import ConnectionSerializer, WorkloadSerializer
from tests.factories import GPUFactory, NodeFactory

pytestmark = pytest.mark.django_db

UTC = datetime.UTC


class _Thing:
    """An object with what DRF's reading of a source meets: plain attributes, a method to call,
    an attribute path through None, a missing attribute."""

    def __init__(self, **kwargs) -> None:
        self.__dict__.update(kwargs)

    def shout(self) -> str:
        return self.word.upper()


class PlainSerializer(serializers.Serializer):
    word = serializers.CharField()
    shout = serializers.CharField()  # a method: DRF calls it
    number = serializers.IntegerField()
    price = serializers.DecimalField(max_digits=6, decimal_places=2)
    when = serializers.DateTimeField(allow_null=True)
    when_local = serializers.DateTimeField(
        source="when", default_timezone=zoneinfo.ZoneInfo("Europe/Berlin")
    )
    when_text = serializers.DateTimeField(source="when", format="%Y-%m-%d %H:%M")
    day = serializers.DateField(allow_null=True)
    nested = serializers.CharField(source="inner.word", allow_null=True)
    missing_null = serializers.CharField(source="nowhere", allow_null=True)
    missing_default = serializers.CharField(source="nowhere", default="dflt")
    missing_skipped = serializers.CharField(source="nowhere", required=False)
    tags = serializers.ListField(child=serializers.CharField())
    facts = serializers.DictField()
    choice = serializers.ChoiceField(choices=[("a", "A"), (1, "One")])
    whole = serializers.SerializerMethodField()
    flag = serializers.BooleanField(source="choice")  # "a", 1, "zz": DRF's own reading
    counts = serializers.DictField(child=serializers.IntegerField())
    ratios = serializers.ListField(child=serializers.FloatField())
    table = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))

    def get_whole(self, thing) -> str:
        return f"{thing.word}-{thing.number}"


class FastSerializer(RowSerializerMixin, PlainSerializer):
    pass


class PlainPairSerializer(serializers.Serializer):
    label = serializers.CharField()
    value = serializers.CharField(source="values.first")


class FastPairSerializer(RowSerializerMixin, PlainPairSerializer):
    pass


def _things() -> list:
    aware = datetime.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=UTC)
    common = {"tags": ["x", 2], "facts": {"a": 1, 2: None}, "day": datetime.date(2026, 1, 2),
              "counts": {"a": "3", 4: None, "b": True}, "ratios": [1, "2.5", None],
              "table": [{"k": 1, 2: None}, None, {}]}
    return [
        _Thing(word="hi", number=3, price=Decimal("1.5"), when=aware, choice="a",
               inner=_Thing(word="in"), **common),
        _Thing(word="", number="7", price=Decimal("0"), when=None, choice=1, inner=None,
               **common | {"day": None}),
        _Thing(word="naive", number=0, price=2, choice="zz", inner=_Thing(word=None),
               when=datetime.datetime(2026, 3, 4, 5, 6, 7), **common),
    ]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_the_fast_rows_are_drfs_rows_for_objects(zone):
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        fast = FastSerializer(_things(), many=True).data
        plain = PlainSerializer(_things(), many=True).data

    assert fast == plain
    assert [list(row) for row in fast] == [list(row) for row in plain]  # the same keys, in order
    assert "missing_skipped" not in fast[0]
    assert fast[0]["when"] == ("2026-03-04T05:06:07.000890Z" if zone == "UTC" else
                               "2026-03-04T00:06:07.000890-05:00")


class PlainInnerSerializer(serializers.Serializer):
    word = serializers.CharField(allow_null=True)
    when = serializers.DateTimeField(allow_null=True)
    on = serializers.BooleanField(allow_null=True)


class FastInnerSerializer(RowSerializerMixin, PlainInnerSerializer):
    pass


class PlainOuterSerializer(serializers.Serializer):
    word = serializers.CharField()
    inner = PlainInnerSerializer(allow_null=True)
    itself = PlainInnerSerializer(source="*")
    inners = PlainInnerSerializer(many=True)


class FastOuterSerializer(RowSerializerMixin, serializers.Serializer):
    word = serializers.CharField()
    inner = FastInnerSerializer(allow_null=True)
    itself = FastInnerSerializer(source="*")
    inners = FastInnerSerializer(many=True)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_nested_fast_rows_are_drfs_nested_rows(zone):
    aware = datetime.datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    rows = [
        _Thing(word="a", when=aware, on=True, inner=_Thing(word="b", when=None, on="no"),
               inners=[_Thing(word="c", when=aware, on=0), {"word": 1, "when": None, "on": None}]),
        _Thing(word="d", when=None, on=None, inner=None, inners=[]),
    ]
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        fast = FastOuterSerializer(rows, many=True).data
        plain = PlainOuterSerializer(rows, many=True).data
        one = FastOuterSerializer(rows[0]).data

    assert fast == plain
    assert one == plain[0]
    assert fast[0]["inners"][0]["when"] == plain[0]["itself"]["when"]


def test_the_fast_rows_are_drfs_rows_for_mappings():
    rows = [
        {"label": "a", "values": {"first": "1"}},
        {"label": 2, "values": {"first": None}},
    ]
    assert FastPairSerializer(rows, many=True).data == PlainPairSerializer(rows, many=True).data


def test_an_error_drf_raises_reading_a_row_is_raised_as_drf_raises_it():
    class Plain(serializers.Serializer):
        nested = serializers.CharField(source="inner.word")

    class Fast(RowSerializerMixin, Plain):
        pass

    thing = _Thing(inner=None)
    with pytest.raises(AttributeError) as plain:
        Plain(thing).data  # noqa: B018
    with pytest.raises(AttributeError) as fast:
        Fast(thing).data  # noqa: B018
    assert str(fast.value) == str(plain.value).replace("`Plain`", "`Fast`")


def _stock(serializer_class, rows, **kwargs) -> list:
    """DRF's own loop over the rows, on the same serializer's fields."""
    serializer = serializer_class(**kwargs)
    return [serializers.Serializer.to_representation(serializer, row) for row in rows]


def test_the_workload_list_is_drfs(tenant, platform_admin):
    now = timezone.now()
    for n, status in enumerate([WorkloadStatus.READY, WorkloadStatus.PENDING, "failed"]):
        Workload.objects.create(
            tenant=tenant, kind="inference", name=f"chat-{n}", status=status,
            demand={"gpu:nvidia-h100-80gb": n + 1}, launched_by=platform_admin if n else None,
            observed={"connection": {"items": [["URL", "http://x"]], "notes": ["n"]},
                      "details": {"replicas": n}, "conditions": [{"type": "Ready"}]},
            observation_recorded_at=now, ready_at=now if n == 0 else None,
            reconcile_error="boom" * n,
        )
    request = Request(APIRequestFactory().get("/api/v1/workloads/"))
    rows = list(workloads_listed_to(platform_admin).order_by("pk"))
    joined = list(workloads_visible_to(platform_admin).order_by("pk"))  # tenant, user joined

    fast = WorkloadSerializer(rows, many=True, context={"request": request}).data

    assert fast == _stock(WorkloadSerializer, joined, context={"request": request})
    assert [row["status_label"] for row in fast] == ["Ready", "Pending", "Failed"]
    assert [row["launched_by"] for row in fast] == [None, platform_admin.username,
                                                     platform_admin.username]
    assert fast[0]["connection"]["items"] == [{"label": "URL", "value": "http://x"}]


def test_a_choice_label_is_what_get_display_gives(tenant):
    workload = Workload.objects.create(tenant=tenant, kind="vm", name="a", status="failed")

    class Labels(serializers.ModelSerializer):
        label = ChoiceLabelField(source="status")
        stock = serializers.CharField(source="get_status_display", read_only=True)

        class Meta:
            model = Workload
            fields = ["label", "stock"]

    for status in [*WorkloadStatus.values, "not-a-status"]:
        workload.status = status
        data = Labels(workload).data
        assert data["label"] == data["stock"]


def test_the_quota_request_and_tenant_lists_are_drfs(tenant, other_tenant, platform_admin):
    for n in range(3):
        quota_request = QuotaRequest.objects.create(
            tenant=tenant, requested_by=platform_admin if n else None, justification=f"n{n}"
        )
        QuotaRequestLine.objects.create(request=quota_request, resource="cpu", amount=n + 1)
    requests = list(quota_requests_listed_to(platform_admin))
    joined = list(quota_requests_visible_to(platform_admin))  # tenant and users joined
    tenants = list(Tenant.objects.order_by("name"))

    assert QuotaRequestSerializer(requests, many=True).data == _stock(
        QuotaRequestSerializer, joined
    )
    assert [row["requested_by"] for row in QuotaRequestSerializer(requests, many=True).data] == [
        platform_admin.username, platform_admin.username, None
    ]
    assert TenantSerializer(tenants, many=True).data == _stock(TenantSerializer, tenants)


def test_the_node_list_is_drfs():
    node = NodeFactory()
    GPUFactory(node=node, index=0)
    NodeFactory(rack=None, position=None)
    listed = list(NODE_API_LIST.all())  # rack and site annotated
    nodes = list(nodes_for_list())  # rack and site joined

    assert NodeListSerializer(listed, many=True).data == _stock(NodeListSerializer, nodes)
    assert NodeListSerializer(nodes, many=True).data == _stock(NodeListSerializer, nodes)
    assert [row["rack"] is None for row in NodeListSerializer(listed, many=True).data] == [
        node.rack is None for node in nodes
    ]


def test_the_lists_show_a_member_their_tenants_rows_only(
    api_client, tenant, other_tenant, tenant_member, finance
):
    for owner in (tenant, other_tenant):
        Workload.objects.create(tenant=owner, kind="vm", name="box", status="ready")
        QuotaRequest.objects.create(tenant=owner, justification="more")

    api_client.force_authenticate(tenant_member)
    workloads = api_client.get("/api/v1/workloads/").json()
    requests = api_client.get("/api/v1/quota-requests/").json()
    assert [row["tenant"] for row in workloads["results"]] == [tenant.slug]
    assert [row["tenant"] for row in requests["results"]] == [tenant.slug]
    assert workloads["count"] == requests["count"] == 1
    assert api_client.get(f"/api/v1/workloads/?tenant={other_tenant.slug}").json()["count"] == 0

    api_client.force_authenticate(finance)  # sees every tenant
    assert api_client.get("/api/v1/workloads/").json()["count"] == 2
    assert api_client.get("/api/v1/quota-requests/").json()["count"] == 2


def test_a_row_serializer_builds_its_fields_once_and_each_request_gets_its_own_urls(tenant):
    Workload.objects.create(tenant=tenant, kind="vm", name="box", status="ready")
    rows = list(Workload.objects.all())
    factory = APIRequestFactory()
    first = Request(factory.get("/api/v1/workloads/"))
    second = Request(factory.get("/api/v1/workloads/", secure=True))

    one = WorkloadSerializer(rows, many=True, context={"request": first})
    one_data = one.data
    two = WorkloadSerializer(rows, many=True, context={"request": second})
    two_data = two.data

    assert one.child.fields is two.child.fields  # built once (per thread and class)
    assert one_data[0]["url"].startswith("http://testserver/api/v1/workloads/")
    assert two_data[0]["url"].startswith("https://testserver/api/v1/workloads/")
    # Used again after another serializer took the fields: its own request again.
    assert one.child.to_representation(rows[0])["url"] == one_data[0]["url"]


def test_a_row_serializer_validating_data_builds_fields_of_its_own():
    listed = FastSerializer([], many=True)
    listed.data  # noqa: B018
    validating = FastSerializer(data={"word": "hi"})

    assert validating.fields is not listed.child.fields
    assert validating.fields is validating.fields


def test_a_workloads_connection_is_what_its_declared_fields_write():
    stored = {"items": [["URL", "http://x"], ["bad"], [1, 2]], "commands": [("ssh", "ssh a")],
              "notes": ["n", 3]}
    serializer = ConnectionSerializer()
    for connection in (stored, {}, None, {"items": None}):
        fast = serializer.to_representation(connection)
        # DRF's own loop over the declared fields, on the mapping the stored form is read as.
        assert fast == serializers.Serializer.to_representation(serializer, dict(fast))
    assert serializer.to_representation(stored) == {
        "items": [{"label": "URL", "value": "http://x"}, {"label": "1", "value": "2"}],
        "commands": [{"label": "ssh", "command": "ssh a"}],
        "notes": ["n", "3"],
    }
