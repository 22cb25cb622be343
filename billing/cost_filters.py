"""The cost breakdown's parameters, shared by the spend page, the usage explorer and the API:
what to group by, and a month (`month=YYYY-MM`) or a range of months (`start`, `end`, both
included); this month by default. Bad input is a field error, never a 500."""

from __future__ import annotations

import io
import re
from datetime import MAXYEAR, UTC, date, timedelta

from django import forms
from django.http import HttpResponse
from django.utils import timezone

from core import csv_export

from .services.cost_breakdown import MAX_MONTHS, By, CostBreakdown, month_range

MONTH = re.compile(r"^(\d{4})-(\d{1,2})$")
FIRST_YEAR = 2000
# A month's end is the next month's start: December of the last year a date can hold has none.
LAST_YEAR = MAXYEAR - 1


class MonthField(forms.Field):
    """A month as `<input type="month">` sends it: YYYY-MM."""

    def __init__(self, **kwargs) -> None:
        super().__init__(required=False, widget=forms.TextInput(attrs={"type": "month"}),
                         **kwargs)

    def to_python(self, value) -> date | None:
        value = str(value or "").strip()[:20]
        if not value:
            return None
        match = MONTH.match(value)
        if not match or not 1 <= int(match[2]) <= 12:
            raise forms.ValidationError("Give a month as YYYY-MM, e.g. 2026-11.")
        if not FIRST_YEAR <= int(match[1]) <= LAST_YEAR:
            raise forms.ValidationError(
                f"Give a month from {FIRST_YEAR}-01 to {LAST_YEAR}-12.")
        return date(int(match[1]), int(match[2]), 1)


class CostBreakdownForm(forms.Form):
    by = forms.ChoiceField(required=False, choices=By.CHOICES, label="Group by")
    month = MonthField(label="Month")
    start = MonthField(label="From month")
    end = MonthField(label="To month")

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        data["by"] = data.get("by") or By.WORKLOAD
        this_month = timezone.now().astimezone(UTC).date().replace(day=1)
        if data.get("month") and (data.get("start") or data.get("end")):
            self.add_error("month", "Give a month, or a range (start and end), not both.")
            return data
        first = data.get("month") or data.get("start") or data.get("end") or this_month
        last = data.get("month") or data.get("end") or max(first, this_month)
        if last < first:
            self.add_error("end", "The range ends before it starts.")
            return data
        if (last.year - first.year) * 12 + last.month - first.month + 1 > MAX_MONTHS:
            self.add_error("end", f"Pick at most {MAX_MONTHS} months.")
            return data
        data["period"] = month_range(first, last)
        return data


CSV_COLUMNS = [
    "tenant", "period_start", "period_end", "group_by", "key", "name", "detail", "row_kind",
    "unit_hours", "usage", "downtime_credit", "discount", "tax", "total", "currency",
]


def breakdown_csv(result: CostBreakdown) -> HttpResponse:
    """The breakdown's rows as CSV, through the formula-safe writer (names and labels are
    people's text). The `total` column adds up to the invoices' totals."""
    out = io.StringIO()
    writer = csv_export.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in result.rows:
        writer.writerow([
            result.tenant.slug, result.start.date().isoformat(), result.end.date().isoformat(),
            result.by, row.key, row.name, row.detail, row.kind, row.unit_hours, row.usage,
            row.credit, row.discount, row.tax, row.total, result.currency,
        ])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    name = f"cost-by-{result.by}-{result.tenant.slug}-{result.start:%Y-%m}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


class FocusMonthForm(forms.Form):
    """The month a FOCUS export covers: last month by default (the month finance issues)."""

    month = MonthField(label="Month")

    def clean(self):
        data = super().clean()
        if not self.errors and not data.get("month"):
            this_month = timezone.now().astimezone(UTC).date().replace(day=1)
            data["month"] = (this_month - timedelta(days=1)).replace(day=1)
        return data


def focus_response(text: str, month: date) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="focus-1.2-{month:%Y-%m}.csv"'
    return response
