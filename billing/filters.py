"""Filters for finance's invoice list and cost-center roll-up, shared by the pages and the API."""

from datetime import UTC, date, datetime

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from core.api.filtering import FormOnceFilterSet

from .models import Invoice, InvoiceStatus

MONTH_FORMAT = "%Y-%m"
FIRST_YEAR, LAST_YEAR = 2000, 2999


def month_start(month: date) -> datetime:
    """The first instant (UTC) of the calendar month `month` falls in."""
    return datetime(month.year, month.month, 1, tzinfo=UTC)


def next_month_start(month: date) -> datetime:
    year, index = divmod(month.year * 12 + month.month, 12)  # month.month is 1-based
    return datetime(year, index + 1, 1, tzinfo=UTC)


class MonthField(forms.DateField):
    """A calendar month written YYYY-MM (as `<input type="month">` sends it)."""

    input_formats = [MONTH_FORMAT]
    default_error_messages = {"invalid": "Enter a month as YYYY-MM, e.g. 2026-03."}

    def __init__(self, **kwargs):
        kwargs.setdefault("input_formats", [MONTH_FORMAT])
        super().__init__(**kwargs)

    def validate(self, value: date | None) -> None:
        super().validate(value)
        # A year the calendar arithmetic (next month, due dates) can still count from.
        if value is not None and not FIRST_YEAR <= value.year <= LAST_YEAR:
            raise forms.ValidationError(
                f"Enter a month between {FIRST_YEAR}-01 and {LAST_YEAR}-12.", code="out_of_range"
            )


class MonthFilter(django_filters.Filter):
    """Invoices (or lines) whose period starts in that month, or from/until it."""

    field_class = MonthField

    def filter(self, qs: QuerySet, value: date | None) -> QuerySet:
        if value is None:
            return qs
        start, end = month_start(value), next_month_start(value)
        if self.lookup_expr == "gte":
            return qs.filter(**{f"{self.field_name}__gte": start})
        if self.lookup_expr == "lte":
            return qs.filter(**{f"{self.field_name}__lt": end})
        return qs.filter(**{f"{self.field_name}__gte": start, f"{self.field_name}__lt": end})


SORTS = (
    ("number", "number"),
    ("tenant_name", "tenant"),
    ("cost_center", "cost_center"),
    ("period_start", "period"),
    ("status", "status"),
    ("issue_date", "issue_date"),
    ("due_date", "due_date"),
    ("subtotal", "subtotal"),
    ("total", "total"),
)


class InvoiceFilterSet(FormOnceFilterSet):
    period = MonthFilter(field_name="period_start", label="Period",
                         help_text="The invoiced month, YYYY-MM.")
    period_from = MonthFilter(field_name="period_start", lookup_expr="gte", label="From month",
                              help_text="Periods from this month on, YYYY-MM.")
    period_to = MonthFilter(field_name="period_start", lookup_expr="lte", label="To month",
                            help_text="Periods up to and including this month, YYYY-MM.")
    # A slug, not a choice among tenants: an unknown one lists nothing (and says nothing about
    # which tenants exist).
    tenant = django_filters.CharFilter(field_name="tenant__slug", label="Tenant",
                                       help_text="A tenant's slug.")
    cost_center = django_filters.CharFilter(field_name="cost_center", lookup_expr="iexact",
                                            label="Cost center")
    status = django_filters.MultipleChoiceFilter(choices=InvoiceStatus.choices, label="Status")
    amount_min = django_filters.NumberFilter(
        field_name="total", lookup_expr="gte", label="Total at least",
        max_digits=14, decimal_places=2,
    )
    amount_max = django_filters.NumberFilter(
        field_name="total", lookup_expr="lte", label="Total at most",
        max_digits=14, decimal_places=2,
    )
    q = django_filters.CharFilter(method="filter_search", label="Search",
                                  help_text="An invoice number or a tenant's name.")
    sort = django_filters.OrderingFilter(fields=SORTS, label="Sort by")

    class Meta:
        model = Invoice
        fields: list[str] = []

    def filter_search(self, queryset: QuerySet[Invoice], name: str, value: str):
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(
            Q(number__icontains=value) | Q(tenant_name__icontains=value)
            | Q(tenant__slug__iexact=value)
        )


def filter_errors(filters: django_filters.FilterSet, query, *, ignore=("page",)) -> list[str]:
    """What is wrong with a page's filter: a value it cannot read, or a filter it does not have."""
    errors = [
        f"{filters.form.fields[name].label or name}: {message}"
        for name, messages_ in filters.errors.items()
        for message in messages_
    ]
    unknown = sorted(set(query) - set(filters.filters) - set(ignore))
    errors += [f"There is no filter “{name}”." for name in unknown]
    return errors
