"""Filters for the node list, shared by the page and the API."""

import django_filters
from django.db.models import Exists, OuterRef, Q, QuerySet

from core.api.filtering import FormOnceFilterSet

from .models import GPU, Cluster, GpuSharing, Node, NodeState, Site
from .selectors.nodes import NodeHealth


class NodeFilterSet(FormOnceFilterSet):
    q = django_filters.CharFilter(method="filter_search", label="Search")
    site = django_filters.ModelChoiceFilter(
        field_name="rack__site", to_field_name="slug", queryset=Site.objects.order_by("name"),
        empty_label="All sites",
    )
    cluster = django_filters.ModelChoiceFilter(
        field_name="cluster", to_field_name="slug", queryset=Cluster.objects.order_by("name"),
        empty_label="All clusters",
    )
    rack = django_filters.NumberFilter(field_name="rack_id")
    model = django_filters.ChoiceFilter(
        choices=GPU.MODEL_CHOICES, method="filter_model", label="GPU model",
        empty_label="All models",
    )
    state = django_filters.MultipleChoiceFilter(choices=NodeState.choices)
    health = django_filters.ChoiceFilter(
        choices=NodeHealth.choices, field_name="health", empty_label="Any health"
    )
    sharing = django_filters.ChoiceFilter(
        choices=GpuSharing.choices, field_name="gpu_sharing", empty_label="Any sharing",
        label="GPU sharing",
    )
    reserved_for = django_filters.CharFilter(
        method="filter_reserved", label="Reserved for",
        help_text="A tenant slug, 'any' (reserved for someone) or 'none' (shared).",
    )

    class Meta:
        model = Node
        fields: list[str] = []

    def filter_search(self, queryset: QuerySet[Node], name: str, value: str) -> QuerySet[Node]:
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(
            Q(hostname__icontains=value) | Q(k8s_name__icontains=value) | Q(serial__iexact=value)
        )

    def filter_model(self, queryset: QuerySet[Node], name: str, value: str) -> QuerySet[Node]:
        return queryset.filter(Exists(GPU.objects.filter(node=OuterRef("pk"), model=value)))

    def filter_reserved(self, queryset: QuerySet[Node], name: str, value: str) -> QuerySet[Node]:
        value = value.strip()
        if value == "any":
            return queryset.exclude(reserved_for="")
        if value == "none":
            return queryset.filter(reserved_for="")
        return queryset.filter(reserved_for=value) if value else queryset
