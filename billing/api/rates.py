"""The rate card, read-only: every signed-in user may see what the fleet costs."""

from datetime import UTC, datetime

import django_filters
from django.db.models import Q, QuerySet
from rest_framework import viewsets

from core.api.filtering import FormOnceFilterSet
from core.api.scopes import Scope

from ..models import Rate
from ..serializers import RateSerializer


class RateFilterSet(FormOnceFilterSet):
    resource = django_filters.CharFilter(help_text="A resource class, e.g. cpu.")
    at = django_filters.IsoDateTimeFilter(
        method="filter_at", label="In force at",
        help_text="Only the rates in force at this instant (ISO 8601), e.g. now's prices.",
    )

    class Meta:
        model = Rate
        fields = ["resource", "unit"]

    def filter_at(self, queryset: QuerySet[Rate], name: str, value: datetime) -> QuerySet[Rate]:
        # In UTC: PostgreSQL refuses offsets past ±16 h, which ISO 8601 (and Python) allow.
        value = value.astimezone(UTC)
        return queryset.filter(valid_from__lte=value).filter(
            Q(valid_to__isnull=True) | Q(valid_to__gt=value)
        )


class RateViewSet(viewsets.ReadOnlyModelViewSet):
    """Prices per unit-hour (or unit-month) of every resource class, with the periods they are
    in force; managed by platform admins in Django admin."""

    read_scope = Scope.BILLING_READ

    serializer_class = RateSerializer
    filterset_class = RateFilterSet
    queryset = Rate.objects.order_by("resource", "valid_from", "id")
