"""Django admin for workloads: the VM boot images platform admins offer, and every tenant's
workloads (read-only, with "reconcile now").

Every save goes through a service (validation, audit event). Images are retired by unticking
`active`, not deleted: the audit trail and the VMs launched from one keep its name.
"""

from django.contrib import admin, messages

from core.admin import ReadOnlyModelAdmin
from core.admin_filters import RelatedByNameListFilter
from core.choices import admin_badge

from .models import VmImage, Workload
from .services.catalog import vm_image_save
from .services.reconcile import workloads_reconcile_now


@admin.register(VmImage)
class VmImageAdmin(admin.ModelAdmin):
    list_display = ["label", "key", "container_disk", "min_disk_gib", "default_user", "active"]
    list_filter = ["active"]
    search_fields = ["key", "label", "container_disk"]
    fields = ["key", "label", "container_disk", "min_disk_gib", "default_user", "active"]

    def get_readonly_fields(self, request, obj=None):
        # The key is what VM specs and the launch form refer to.
        return ["key"] if obj else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change):
        vm_image_save(actor=request.user, image=obj, changed=form.changed_data if change else ())


@admin.register(Workload)
class WorkloadAdmin(ReadOnlyModelAdmin):
    """Every tenant's workloads, for platform admins: read-only (tenants launch, scale and
    delete them); "reconcile now" queues the level-triggered apply and look at once."""

    list_display = ["name", "tenant", "kind", "status_badge", "status_reason", "launched_by",
                    "created_at", "in_sync"]
    list_filter = ["status", "kind", ("tenant", RelatedByNameListFilter)]
    search_fields = ["name", "tenant__slug", "status_reason", "status_message"]
    list_select_related = ["tenant", "launched_by"]
    date_hierarchy = "created_at"
    actions = ["reconcile_now"]

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Workload) -> str:
        return admin_badge(value=obj.status, label=obj.get_status_display(),
                           color=obj.status_color)

    @admin.display(boolean=True, description="applied")
    def in_sync(self, obj: Workload) -> bool:
        return obj.in_sync

    @admin.action(description="Reconcile the selected workloads now")
    def reconcile_now(self, request, queryset) -> None:
        queued = workloads_reconcile_now(
            actor=request.user, workload_ids=list(queryset.values_list("pk", flat=True))
        )
        self.message_user(request, f"Queued {queued} workload(s) for the cluster.",
                          messages.SUCCESS)
