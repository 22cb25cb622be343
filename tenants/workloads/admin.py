"""Django admin for workloads: the VM boot images and notebook images platform admins offer,
every tenant's
workloads (read-only, with "reconcile now"), their idle GPU policies and idle episodes.

Every save goes through a service (validation, audit event). Images are retired by unticking
`active`, not deleted: the audit trail and the VMs launched from one keep its name.
"""

from django.conf import settings
from django.contrib import admin, messages

from core.admin import ReadOnlyModelAdmin
from core.admin_filters import RelatedByNameListFilter
from core.choices import admin_badge

from .models import IdleEpisode, IdlePolicy, NotebookImage, VmImage, Workload
from .services.catalog import notebook_image_save, vm_image_save
from .services.idle import POLICY_FIELDS, idle_policy_save
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


@admin.register(NotebookImage)
class NotebookImageAdmin(VmImageAdmin):
    """The images the notebook launch form offers; retired by unticking `active`."""

    list_display = ["label", "key", "image", "interface", "active"]
    list_filter = ["active", "interface"]
    search_fields = ["key", "label", "image"]
    fields = ["key", "label", "image", "interface", "active"]

    def save_model(self, request, obj, form, change):
        notebook_image_save(actor=request.user, image=obj,
                            changed=form.changed_data if change else ())


@admin.register(Workload)
class WorkloadAdmin(ReadOnlyModelAdmin):
    """Every tenant's workloads, for platform admins: read-only (tenants launch, scale and
    delete them); "reconcile now" queues the level-triggered apply and look at once."""

    list_display = ["name", "tenant", "kind", "cluster", "status_badge", "status_reason",
                    "launched_by", "created_at", "in_sync"]
    list_filter = ["status", "kind", ("cluster", RelatedByNameListFilter),
                   ("tenant", RelatedByNameListFilter)]
    search_fields = ["name", "tenant__slug", "status_reason", "status_message"]
    list_select_related = ["tenant", "launched_by", "cluster"]
    date_hierarchy = "created_at"
    actions = ["reconcile_now"]

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Workload) -> str:
        if obj.cluster_unreachable:  # its last status may no longer hold: say why
            return admin_badge(value="unknown", label=obj.status_detail, color="dark")
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


@admin.register(IdlePolicy)
class IdlePolicyAdmin(admin.ModelAdmin):
    """Each tenant's idle GPU policy (its owners also choose it on its Idle GPUs page); an
    empty number takes the fleet's default. Saved through the service: validated, audited."""

    list_display = ["tenant", "mode", "threshold_percent", "window_minutes", "grace_minutes",
                    "notebook_idle_hours", "updated_by", "updated_at"]
    list_filter = ["mode"]
    search_fields = ["tenant__slug", "tenant__name"]
    list_select_related = ["tenant", "updated_by"]
    fields = ["tenant", *POLICY_FIELDS]

    def get_readonly_fields(self, request, obj=None):
        return ["tenant"] if obj else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change):
        idle_policy_save(tenant=obj.tenant, actor=request.user,
                         **{name: getattr(obj, name) for name in POLICY_FIELDS})


@admin.register(IdleEpisode)
class IdleEpisodeAdmin(ReadOnlyModelAdmin):
    """Every workload's idle GPU episodes and what the policies did: read-only."""

    list_display = ["workload", "tenant", "state", "gpus", "utilization", "started_at",
                    "warned_at", "acted_at", "action", "ended_at"]
    list_filter = ["state", ("workload__tenant", RelatedByNameListFilter)]
    search_fields = ["workload__name", "workload__tenant__slug", "action"]
    list_select_related = ["workload__tenant"]
    date_hierarchy = "started_at"
    # The prices per hour as people read them (to the cent), not the column's six places.
    exclude = ["idle_per_hour", "saved_per_hour"]
    readonly_fields = ["idle_cost_per_hour", "saved_cost_per_hour"]

    @admin.display(description="tenant", ordering="workload__tenant__slug")
    def tenant(self, obj: IdleEpisode) -> str:
        return obj.workload.tenant.slug

    @admin.display(description="idle GPUs' cost per hour")
    def idle_cost_per_hour(self, obj: IdleEpisode) -> str:
        return _per_hour(obj.idle_per_hour)

    @admin.display(description="saved per hour")
    def saved_cost_per_hour(self, obj: IdleEpisode) -> str:
        return _per_hour(obj.saved_per_hour)


def _per_hour(value) -> str:
    return "—" if value is None else f"{value:,.2f} {settings.BILLING_CURRENCY}"
