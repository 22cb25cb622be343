"""The usage explorer's filters, shared by its page and its API (as NetBox shares filtersets).

A date range (whole UTC days, both ends included; the last 30 days by default), a tenant (by
slug), a GPU model or resource class, and a cost center. Bad input is a field error — a date
that is no date, an end before the start, a range longer than 366 days — never a 500.
"""

from datetime import MAXYEAR, UTC, date, datetime, time, timedelta

from django import forms
from django.core.validators import MaxValueValidator
from django.utils import timezone

from inventory import resource_classes

from .selectors.explorer import UsageFilter

MAX_DAYS = 366
SOURCES = (("allocated", "Allocated (reserved)"), ("measured", "Measured (DCGM)"))


def gpu_resource_choices() -> list[tuple[str, str]]:
    """Every GPU model (all its classes), then each GPU class of the vocabulary."""
    models = [
        (key, f"{model.display_name} (all classes)")
        for key, model in resource_classes.GPU_MODELS.items()
    ]
    classes = [
        (key, resource_classes.parse(key).label)
        for key in resource_classes.all_keys()
        if key.partition(":")[0] in ("gpu", "mig", "hami")
    ]
    return [("", "All GPU classes"), *models, *classes]


DEFAULT_DAYS = 30


def last_days(today: date | None = None) -> tuple[date, date]:
    """The default range: the last 30 days up to today (a month of usage on any day of it)."""
    today = today or timezone.now().astimezone(UTC).date()
    return today - timedelta(days=DEFAULT_DAYS - 1), today


DATE = forms.DateInput(attrs={"type": "date"})
# The last day a range may touch: a range's end is the day after it and its cost card the month
# after its last, and a date holds neither beyond the last year.
LAST_DAY = date(MAXYEAR - 1, 12, 31)
BEFORE_LAST_DAY = MaxValueValidator(LAST_DAY, f"Pick a date up to {LAST_DAY:%Y-%m-%d}.")


class UsageFilterForm(forms.Form):
    start = forms.DateField(required=False, label="From", widget=DATE,
                            validators=[BEFORE_LAST_DAY])
    end = forms.DateField(required=False, label="To", widget=DATE, validators=[BEFORE_LAST_DAY])
    tenant = forms.CharField(required=False, max_length=63, label="Tenant")
    resource = forms.ChoiceField(required=False, label="GPU model or class", choices=())
    cost_center = forms.CharField(required=False, max_length=50, label="Cost center")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["resource"].choices = gpu_resource_choices()

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        default_start, default_end = last_days()
        start = data.get("start") or (
            data["end"].replace(day=1) if data.get("end") else default_start
        )
        # Without an end: up to today, or the longest range allowed from an earlier start.
        end = data.get("end") or max(min(default_end, start + timedelta(days=MAX_DAYS - 1)), start)
        if end < start:
            self.add_error("end", "The end date is before the start date.")
        elif (end - start).days + 1 > MAX_DAYS:
            self.add_error("end", f"Pick a range of at most {MAX_DAYS} days.")
        data["start"], data["end"] = start, end
        return data

    def usage_filter(self, *, tenant_ids: list[int] | None) -> UsageFilter:
        """The validated filter, over `tenant_ids` (None: every tenant) and the chosen ones."""
        data = self.cleaned_data
        return UsageFilter(
            start=datetime.combine(data["start"], time(), tzinfo=UTC),
            end=datetime.combine(data["end"] + timedelta(days=1), time(), tzinfo=UTC),
            tenant_ids=tenant_ids,
            tenant_slug=data.get("tenant") or "",
            resource=data.get("resource") or "",
            cost_center=data.get("cost_center") or "",
        )
