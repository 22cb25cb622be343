"""Usage and utilization endpoints: the explorer's aggregates, scoped like the pages.

Finance and platform admins see every tenant; a tenant's members see their own tenants only
(`tenants_visible_to`): another tenant's slug as a filter selects nothing, as in the other
lists. Bad filters (no date, an end before the start, more than 366 days, an unknown class)
are a 400 with field errors.
"""


from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.scopes import Scope, TokenScopes
from tenants.access import access_for, tenants_visible_to

from ..selectors.explorer import (
    UsageFilter,
    gpu_equivalent,
    gpu_usage_by_day,
    hours,
    unit_label,
    utilization_by_tenant,
)
from ..usage_filters import MAX_DAYS, SOURCES, UsageFilterForm, gpu_resource_choices


class HasAnyRole(BasePermission):
    message = "You hold no role in the portal."

    def has_permission(self, request, view) -> bool:
        return access_for(request.user).has_any_access


def _usage_filter(request: Request) -> UsageFilter:
    form = UsageFilterForm(request.query_params)
    if not form.is_valid():
        raise exceptions.ValidationError(
            {name: [str(message) for message in messages] for name, messages in form.errors.items()}
        )
    access = access_for(request.user)
    tenant_ids = (
        None
        if access.sees_all_tenants
        else list(tenants_visible_to(request.user).values_list("pk", flat=True))
    )
    return form.usage_filter(tenant_ids=tenant_ids)


FILTERS = [
    OpenApiParameter("start", OpenApiTypes.DATE,
                     description="First UTC day (included); default: the first of this month."),
    OpenApiParameter("end", OpenApiTypes.DATE,
                     description=f"Last UTC day (included); default: today. At most {MAX_DAYS} "
                     "days after `start`, never before it."),
    OpenApiParameter("tenant", str, description="A tenant's slug (one you may see)."),
    OpenApiParameter("resource", str, enum=[value for value, _ in gpu_resource_choices() if value],
                     description="A GPU model key (all its classes) or one GPU resource class."),
    OpenApiParameter("cost_center", str, description="Tenants of this cost center only."),
]


class UsageDaySerializer(serializers.Serializer):
    day = serializers.DateField()
    tenant = serializers.CharField(help_text="The tenant's slug.")
    resource = serializers.CharField(help_text="The resource class, e.g. gpu:nvidia-h100-80gb.")
    unit = serializers.CharField(help_text="What an hour of the class is: GPU-hours, …")
    unit_seconds = serializers.IntegerField()
    unit_hours = serializers.DecimalField(max_digits=20, decimal_places=2)
    gpu_hours = serializers.DecimalField(
        max_digits=20, decimal_places=2, allow_null=True,
        help_text="GPU-equivalent hours (a MIG 1g instance is 1/7); null for HAMi memory.",
    )


class UtilizationSerializer(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    tenant_name = serializers.CharField()
    cost_center = serializers.CharField(allow_blank=True)
    allocated_gpu_hours = serializers.DecimalField(max_digits=20, decimal_places=2)
    measured_gpu_hours = serializers.DecimalField(max_digits=20, decimal_places=2)
    busy_gpu_hours = serializers.DecimalField(max_digits=20, decimal_places=2)
    idle_gpu_hours = serializers.DecimalField(
        max_digits=20, decimal_places=2,
        help_text="Allocated minus busy, never negative in any tenant-hour.",
    )
    utilization = serializers.DecimalField(
        max_digits=5, decimal_places=4, allow_null=True,
        help_text="Share (0 to 1) of allocated GPU-hours in use; null if none allocated.",
    )


USAGE_EXAMPLE = OpenApiExample(
    "A day of H100 GPUs",
    response_only=True,
    value={"count": 1, "next": None, "previous": None, "results": [{
        "day": "2026-11-03", "tenant": "acme", "resource": "gpu:nvidia-h100-80gb",
        "unit": "GPU-hours", "unit_seconds": 172800, "unit_hours": "48.00", "gpu_hours": "48.00",
    }]},
)
UTILIZATION_EXAMPLE = OpenApiExample(
    "A tenant using 63 % of what it reserved",
    response_only=True,
    value={"count": 1, "next": None, "previous": None, "results": [{
        "tenant": "acme", "tenant_name": "Acme Labs", "cost_center": "CC-1001",
        "allocated_gpu_hours": "480.00", "measured_gpu_hours": "470.00",
        "busy_gpu_hours": "302.40", "idle_gpu_hours": "177.60", "utilization": "0.6300",
    }]},
)


class UsageView(GenericAPIView):
    """GPU usage per UTC day, tenant and resource class: allocated (reserved, the default) or
    measured (DCGM), summed from the hourly usage records."""

    read_scope = Scope.BILLING_READ
    permission_classes = [TokenScopes, HasAnyRole]
    serializer_class = UsageDaySerializer
    filter_backends: list = []  # the filters are UsageFilterForm's (FILTERS), not a filterset

    @extend_schema(
        parameters=[*FILTERS, OpenApiParameter(
            "source", str, enum=[value for value, _ in SOURCES],
            description="allocated (default) or measured.")],
        responses=UsageDaySerializer(many=True),
        examples=[USAGE_EXAMPLE],
    )
    def get(self, request: Request) -> Response:
        usage = _usage_filter(request)
        source = request.query_params.get("source") or "allocated"
        if source not in dict(SOURCES):
            raise exceptions.ValidationError({"source": ["Choose allocated or measured."]})
        page = self.paginate_queryset(gpu_usage_by_day(usage, source=source))
        rows = []
        for row in page:
            share = gpu_equivalent(row["resource"])
            rows.append({
                "day": row["day"],
                "tenant": row["tenant__slug"],
                "resource": row["resource"],
                "unit": unit_label(row["resource"]),
                "unit_seconds": int(row["unit_seconds"]),
                "unit_hours": hours(row["unit_seconds"]),
                "gpu_hours": None if share is None else hours(share * int(row["unit_seconds"])),
            })
        return self.get_paginated_response(UsageDaySerializer(rows, many=True).data)


class UtilizationView(GenericAPIView):
    """Allocated against measured GPU-hours per tenant, with idle GPU-hours (reserved but
    unused, per tenant-hour) and the share in use, over the hours whose measured metering is
    done (a gap, a pending or an unmetered hour is unknown, not idle)."""

    read_scope = Scope.BILLING_READ
    permission_classes = [TokenScopes, HasAnyRole]
    serializer_class = UtilizationSerializer
    filter_backends: list = []  # the filters are UsageFilterForm's (FILTERS), not a filterset

    @extend_schema(parameters=FILTERS, responses=UtilizationSerializer(many=True),
                   examples=[UTILIZATION_EXAMPLE])
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(utilization_by_tenant(_usage_filter(request)))
        rows = [
            {
                "tenant": row.tenant_slug,
                "tenant_name": row.tenant_name,
                "cost_center": row.cost_center,
                "allocated_gpu_hours": row.allocated_hours,
                "measured_gpu_hours": row.measured_hours,
                "busy_gpu_hours": row.busy_hours,
                "idle_gpu_hours": row.idle_hours,
                "utilization": row.utilization,
            }
            for row in page
        ]
        return self.get_paginated_response(UtilizationSerializer(rows, many=True).data)
