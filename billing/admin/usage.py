"""Django admin for usage records, metering windows, OpenCost cross-checks and metering flags
(GPU time capped by a host's GPUs) — read-only.

Metering writes them; an admin reads them and may ask for windows to be metered again (the
service replaces their records and audits it, with the admin as the actor).
"""

from django.contrib import admin, messages

from core.admin import ReadOnlyModelAdmin
from core.admin_filters import RelatedByNameListFilter
from core.choices import admin_badge

from ..models import CrossCheck, MeteringFlag, MeteringWindow, UsageRecord
from ..services import metering

# An admin action meters in the request (measured windows ask Prometheus): a few at a time.
METER_AGAIN_AT_MOST = 48


@admin.register(UsageRecord)
class UsageRecordAdmin(ReadOnlyModelAdmin):
    list_display = ["hour", "tenant", "source", "resource", "workload", "hostname",
                    "unit_seconds", "busy_seconds", "metered_at"]
    list_filter = ["source", "hour", ("tenant", RelatedByNameListFilter)]
    search_fields = ["tenant__slug", "resource", "hostname", "workload__name"]
    list_select_related = ["tenant", "workload"]
    date_hierarchy = "hour"
    ordering = ["-hour", "tenant__name", "resource"]
    show_full_result_count = False


@admin.register(MeteringWindow)
class MeteringWindowAdmin(ReadOnlyModelAdmin):
    list_display = ["hour", "source", "status_badge", "attempts", "records", "unit_seconds",
                    "metered_at", "last_error"]
    list_filter = ["status", "source", "hour"]
    date_hierarchy = "hour"
    actions = ["meter_again"]

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: MeteringWindow) -> str:
        return admin_badge(value=obj.status, label=obj.get_status_display(),
                           color=obj.status_color)

    @admin.action(description="Meter the selected windows again (their records are replaced)")
    def meter_again(self, request, queryset) -> None:
        windows = list(queryset.order_by("hour", "source")[: METER_AGAIN_AT_MOST + 1])
        if len(windows) > METER_AGAIN_AT_MOST:
            self.message_user(request, f"Pick at most {METER_AGAIN_AT_MOST} windows at a time.",
                              messages.ERROR)
            return
        results = [
            metering.usage_meter_window(source=w.source, hour=w.hour, actor=request.user)
            for w in windows
        ]
        gaps = [w for w in results if w.status != MeteringWindow.Status.DONE]
        if gaps:
            self.message_user(
                request,
                f"{len(results) - len(gaps)} of {len(results)} windows metered; "
                f"{len(gaps)} still a gap: {gaps[0].last_error}",
                messages.WARNING,
            )
        else:
            self.message_user(request, f"{len(results)} windows metered again.",
                              messages.SUCCESS)


@admin.register(CrossCheck)
class CrossCheckAdmin(ReadOnlyModelAdmin):
    list_display = ["hour", "tenant", "portal_gpu_seconds", "opencost_gpu_seconds",
                    "difference_percent", "flagged"]
    list_filter = ["flagged", "hour", ("tenant", RelatedByNameListFilter)]
    search_fields = ["tenant__slug"]
    list_select_related = ["tenant"]
    date_hierarchy = "hour"


@admin.register(MeteringFlag)
class MeteringFlagAdmin(ReadOnlyModelAdmin):
    list_display = ["hour", "kind", "hostname", "tenant", "invoice_month", "gpus",
                    "capacity_seconds", "reported_seconds", "kept_seconds", "flagged_at"]
    list_filter = ["kind", "hour", ("tenant", RelatedByNameListFilter)]
    search_fields = ["hostname", "tenant__slug"]
    list_select_related = ["tenant"]
    date_hierarchy = "hour"

    @admin.display(description="invoice month", ordering="invoice_period")
    def invoice_month(self, obj: MeteringFlag) -> str:
        return f"{obj.invoice_period:%Y-%m}" if obj.invoice_period else "—"
