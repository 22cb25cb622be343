"""Allocated usage records metered before 0010 take their workload's launcher and label.

Not atomic: one UPDATE per range of `BATCH` primary keys, each committed on its own, so that
no lock on the usage table outlives a batch and metering goes on meanwhile. Only the records
that lack what their workload gives are written (a launcher where theirs is empty, a label
where theirs is ""; what a record has is kept), so it writes nothing on a database whose 0010
already copied them (0010 once did, in one UPDATE) and can be run again at any time."""

from django.db import migrations
from django.db.models import Case, F, Max, Min, OuterRef, Q, Subquery, When
from django.db.models.functions import Coalesce

BATCH = 5000


def copy_from_workloads(apps, schema_editor):
    UsageRecord = apps.get_model("billing", "UsageRecord")
    Workload = apps.get_model("tenants", "Workload")
    workload = Workload.objects.filter(pk=OuterRef("workload_id"))
    lacking = UsageRecord.objects.filter(source="allocated", workload__isnull=False).filter(
        Q(launched_by__isnull=True, workload__launched_by__isnull=False)
        | (Q(label="") & ~Q(workload__label=""))
    )
    bounds = UsageRecord.objects.aggregate(first=Min("pk"), last=Max("pk"))
    if bounds["first"] is None:
        return
    for low in range(bounds["first"], bounds["last"] + 1, BATCH):
        lacking.filter(pk__gte=low, pk__lt=low + BATCH).update(
            launched_by_id=Coalesce(
                "launched_by_id", Subquery(workload.values("launched_by_id")[:1])),
            label=Case(When(label="", then=Subquery(workload.values("label")[:1])),
                       default=F("label")),
        )


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ("billing", "0010_usage_record_launched_by_label"),
        ("tenants", "0027_workload_label"),
    ]

    operations = [
        migrations.RunPython(copy_from_workloads, migrations.RunPython.noop, elidable=True),
    ]
