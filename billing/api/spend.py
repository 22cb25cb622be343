"""The tenant's side of billing over the API: this month's spend (with its forecast and budget)
and the price per hour of a launch or of resources, scoped like the pages: another tenant is a
404, bad input a 400 with field errors, never a 500."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.scopes import Scope
from inventory import resource_classes
from tenants.access import tenant_get_for_user
from tenants.workloads.registry import CHOICES as KIND_CHOICES
from tenants.workloads.serializers import unstorable_fields
from tenants.workloads.services.lifecycle import workload_validate

from ..selectors.spend import quote_demand, tenant_spend

MAX_AMOUNT = 1_000_000
MAX_LINES = 50
H100 = "gpu:nvidia-h100-80gb"


# --- spend --------------------------------------------------------------------------------------


class SpendLineSerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField()
    hours = serializers.DecimalField(max_digits=20, decimal_places=6)
    amount = serializers.DecimalField(max_digits=14, decimal_places=2)


class UnpricedSerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField()
    reason = serializers.CharField(help_text="Why it has no price: shown, never billed.")
    hours = serializers.DecimalField(max_digits=20, decimal_places=6, source="quantity_hours")


class AlertSerializer(serializers.Serializer):
    threshold = serializers.IntegerField(help_text="Percent of the budget: 80 or 100.")
    spent = serializers.DecimalField(max_digits=14, decimal_places=2)
    budget = serializers.DecimalField(max_digits=14, decimal_places=2)
    sent_at = serializers.DateTimeField()


class DaySerializer(serializers.Serializer):
    day = serializers.DateField()
    spent = serializers.DecimalField(
        max_digits=14, decimal_places=2, allow_null=True,
        help_text="Cumulative to the end of the day; null for days still ahead.",
    )
    forecast = serializers.DecimalField(
        max_digits=14, decimal_places=2, allow_null=True,
        help_text="From today to month end; null for the days before today.",
    )


class SpendSerializer(serializers.Serializer):
    """A tenant's month so far at the rate card, before discount and tax."""

    tenant = serializers.CharField(source="tenant.slug")
    currency = serializers.CharField()
    month_start = serializers.DateTimeField()
    month_end = serializers.DateTimeField(help_text="Exclusive: the next month's start.")
    as_of = serializers.DateTimeField(source="now")
    metered_through = serializers.DateTimeField(
        allow_null=True, help_text="The end of the last metered hour; null before the first."
    )
    spent = serializers.DecimalField(
        max_digits=14, decimal_places=2, help_text="Metered, up to `metered_through`."
    )
    estimate = serializers.DecimalField(
        max_digits=14, decimal_places=2,
        help_text="An estimate: the running workloads since `metered_through`, at the current "
        "rate card.",
    )
    so_far = serializers.DecimalField(
        max_digits=14, decimal_places=2, help_text="This month's figure: spent + estimate."
    )
    forecast = serializers.DecimalField(
        max_digits=14, decimal_places=2,
        help_text="To month end: at the rate seen so far, or what runs now kept running, "
        "whichever is more.",
    )
    budget = serializers.DecimalField(
        max_digits=14, decimal_places=2, allow_null=True, help_text="Null: no budget set."
    )
    budget_percent = serializers.DecimalField(max_digits=12, decimal_places=1, allow_null=True)
    budget_state = serializers.ChoiceField(choices=["none", "ok", "warning", "over"])
    discount_percent = serializers.DecimalField(max_digits=5, decimal_places=2)
    lines = SpendLineSerializer(many=True)
    unpriced = UnpricedSerializer(many=True)
    alerts = AlertSerializer(many=True, help_text="Budget alerts mailed this month.")
    days = DaySerializer(many=True)
    problem = serializers.CharField(
        help_text="Empty, or why the month cannot be priced now (the rate card needs fixing)."
    )

    def to_representation(self, instance) -> dict[str, Any]:
        data = super().to_representation(instance)
        if not instance.budget:
            data["budget"] = None
        return data


TENANT = OpenApiParameter(
    "tenant", OpenApiTypes.STR, OpenApiParameter.QUERY, required=True,
    description="The tenant's slug (one you are a member of, or any for finance and admins).",
    examples=[OpenApiExample("Acme", value="acme")],
)


class SpendView(APIView):
    """This month's spend of one tenant: by resource class, the forecast to month end, the
    budget and the alerts sent; viewers may read it too."""

    read_scope = Scope.BILLING_READ

    @extend_schema(parameters=[TENANT], responses=SpendSerializer)
    def get(self, request: Request) -> Response:
        try:
            slug = serializers.CharField().run_validation(request.query_params.get("tenant", ""))
        except ValidationError as exc:
            raise ValidationError({"tenant": exc.detail}) from None
        tenant = tenant_get_for_user(user=request.user, slug=slug)
        return Response(SpendSerializer(tenant_spend(tenant=tenant, now=timezone.now())).data)


# --- quotes -------------------------------------------------------------------------------------


class QuoteResourceSerializer(serializers.Serializer):
    resource = serializers.CharField(max_length=100, help_text="A resource class, e.g. cpu.")
    amount = serializers.IntegerField(min_value=1, max_value=MAX_AMOUNT)

    def validate_resource(self, value: str) -> str:
        try:
            resource_classes.parse(value)
        except resource_classes.UnknownResourceClass:
            raise serializers.ValidationError(f"{value!r} is not a known resource class.") from None
        return value


class QuoteRequestSerializer(serializers.Serializer):
    """A launch (`kind` and `spec`, as the launch takes them) or `resources` (e.g. a quota
    request's lines): one of the two."""

    tenant = serializers.CharField(help_text="The tenant's slug.")
    kind = serializers.ChoiceField(choices=KIND_CHOICES, required=False)
    spec = serializers.DictField(required=False, default=dict)
    resources = QuoteResourceSerializer(many=True, required=False, max_length=MAX_LINES,
                                        allow_empty=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("kind" in attrs) == ("resources" in attrs):
            raise serializers.ValidationError(
                {"non_field_errors": ["Send either a kind (with its spec) or resources."]}
            )
        errors = unstorable_fields("spec", attrs.get("spec") or {})
        if errors:
            raise serializers.ValidationError(errors)
        seen = [line["resource"] for line in attrs.get("resources") or []]
        if len(seen) != len(set(seen)):
            raise serializers.ValidationError({"resources": ["Name each resource class once."]})
        return attrs


class QuoteLineSerializer(serializers.Serializer):
    resource = serializers.CharField()
    label = serializers.CharField()
    amount = serializers.IntegerField()
    status = serializers.ChoiceField(
        choices=["priced", "no_rate", "unknown"],
        help_text="no_rate: the rate card has no price for it (it is not free: ask the "
        "platform team).",
    )
    unit_price_per_hour = serializers.DecimalField(max_digits=20, decimal_places=6,
                                                   allow_null=True)
    per_hour = serializers.DecimalField(max_digits=20, decimal_places=4, allow_null=True)


class QuoteSerializer(serializers.Serializer):
    """What holding it costs at the rate card in force now (monthly prices spread over the
    month's hours); `complete` is false when some class has no price."""

    currency = serializers.CharField()
    at = serializers.DateTimeField(help_text="The hour whose rate card priced it.")
    per_hour = serializers.DecimalField(max_digits=14, decimal_places=2)
    per_month = serializers.DecimalField(
        max_digits=14, decimal_places=2, help_text="Per 30-day month (720 hours)."
    )
    complete = serializers.BooleanField()
    lines = QuoteLineSerializer(many=True)
    not_billed = serializers.ListField(
        child=serializers.CharField(), help_text="Counted in quota, not billed by the hour."
    )


QUOTE_EXAMPLES = [
    OpenApiExample(
        "Inference endpoint",
        summary="The price of a launch: an inference endpoint",
        value={"tenant": "acme", "kind": "inference",
               "spec": {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": H100,
                        "gpus_per_replica": 1, "min_replicas": 1, "max_replicas": 2}},
        request_only=True,
    ),
    OpenApiExample(
        "vCluster",
        summary="The price of a launch: a vCluster with its defaults",
        value={"tenant": "acme", "kind": "vcluster", "spec": {}},
        request_only=True,
    ),
    OpenApiExample(
        "Resources",
        summary="The price of resources, e.g. a quota request's increase",
        value={"tenant": "acme", "resources": [{"resource": H100, "amount": 4},
                                               {"resource": "cpu", "amount": 32}]},
        request_only=True,
    ),
]


class QuoteView(APIView):
    """The price per hour (and per 30-day month) of a launch or of resources, per resource
    class, at the rate card in force now. Nothing is launched or stored."""

    read_scope = Scope.BILLING_READ
    write_scope = Scope.BILLING_READ  # a price, computed: nothing is written

    @extend_schema(request=QuoteRequestSerializer, responses=QuoteSerializer,
                   examples=QUOTE_EXAMPLES)
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
        body = QuoteRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        tenant = tenant_get_for_user(user=request.user, slug=data["tenant"])
        if "kind" in data:
            _, demand = workload_validate(tenant=tenant, kind=data["kind"], spec=data["spec"])
        else:
            demand = {line["resource"]: line["amount"] for line in data["resources"]}
        quote = quote_demand(demand=demand, at=timezone.now())
        return Response(QuoteSerializer(quote).data)
