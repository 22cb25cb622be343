"""Django admin for the inventory. Lifecycle state is read-only here: it moves only through the
lifecycle services, which the admin actions below call (cordon, uncordon, drain, return).
Sites, racks and nodes' details save through `services.records` (audit event, the cluster's
reservation label and taint follow at once); GPUs, NICs, health events and validations come
from the cluster sync, the import and the node pages, and are read-only here."""

from django.contrib import admin, messages
from django.db import models
from django.db.models import Count
from django.template.response import TemplateResponse

from core.admin import ReadOnlyModelAdmin
from core.choices import admin_badge
from core.errors import DomainError

from .models import (
    GPU,
    NIC,
    Cluster,
    HealthEvent,
    InventoryRun,
    Node,
    NodeValidation,
    Rack,
    Site,
)
from .selectors.drain import nodes_drain_impact
from .services import cluster_records, lifecycle, reachability, records


class RecordAdmin(admin.ModelAdmin):
    """Sites and racks: saved and deleted through `services.records`, with an audit event."""

    def save_model(self, request, obj, form, change):
        records.record_save(actor=request.user, obj=obj, changed=form.changed_data)

    def delete_model(self, request, obj):
        records.record_delete(actor=request.user, obj=obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            records.record_delete(actor=request.user, obj=obj)


@admin.register(Site)
class SiteAdmin(RecordAdmin):
    list_display = ["name", "slug", "region"]
    search_fields = ["name", "slug"]


@admin.register(Rack)
class RackAdmin(RecordAdmin):
    list_display = ["name", "site", "row", "units"]
    list_filter = ["site"]
    list_select_related = ["site"]


@admin.action(description="Check the connection to the selected clusters")
def check_connection(modeladmin, request, queryset) -> None:
    """Try each selected cluster now (GET /version), even one waiting for its next try; what
    comes of it is recorded as any call's would be, and audited."""
    for cluster in queryset.order_by("name")[:20]:
        check = reachability.cluster_connection_check(cluster=cluster, actor=request.user)
        if check.ok:
            version = check.version or "(it did not say its version)"
            modeladmin.message_user(
                request, f"{cluster.name} answers: Kubernetes {version}.", messages.SUCCESS
            )
        else:
            modeladmin.message_user(
                request, f"{cluster.name} does not answer: {check.error}", messages.ERROR)


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    """Clusters: added and edited here, saved through `services.cluster_records` (a state change
    is an audited decision of its own); never deleted (retire one instead: its nodes and
    workloads keep naming it)."""

    list_display = ["name", "slug", "site", "status_badge", "node_count", "last_contact_at",
                    "last_error"]
    list_filter = ["state", "site", "reachable"]
    search_fields = ["name", "slug", "api_server"]
    list_select_related = ["site"]
    actions = [check_connection]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    readonly_fields = ["reachable", "unreachable_since", "failures", "next_probe_at",
                       "last_error", "last_contact_at", "created_at"]
    fieldsets = [
        (None, {"fields": ["slug", "name", "site", "api_server", "prometheus_url", "state"]}),
        ("Credentials", {"fields": ["credentials", "kubeconfig_path", "kube_context",
                                    "secret_name"]}),
        ("Reachability (observed by the portal)", {"fields": readonly_fields}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(node_total=Count("nodes"))

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "slug"] if obj is not None else self.readonly_fields

    @admin.display(description="status", ordering="state")
    def status_badge(self, obj: Cluster) -> str:
        return admin_badge(value=obj.status, label=obj.status_label, color=obj.status_color)

    @admin.display(description="nodes", ordering="node_total")
    def node_count(self, obj: Cluster) -> int:
        return obj.node_total

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change):
        cluster_records.cluster_save(actor=request.user, cluster=obj, changed=form.changed_data)


class GPUInline(admin.TabularInline):
    model = GPU
    extra = 0
    can_delete = False
    fields = ["index", "model", "uuid", "memory_gib", "mig_layout", "health", "numa_node",
              "nvlink_domain"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # from the cluster sync and the import


class NICInline(admin.TabularInline):
    model = NIC
    extra = 0
    can_delete = False
    fields = ["name", "kind", "mac_address", "ib_guid", "link_speed_gbps", "fabric", "rail",
              "numa_node"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # from the import


class HealthEventInline(admin.TabularInline):
    model = HealthEvent
    extra = 0
    can_delete = False
    fields = ["opened_at", "kind", "subject", "severity", "detail", "remediation", "resolved_at"]
    readonly_fields = fields
    ordering = ["-opened_at"]
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


def _lifecycle_action(service, verb: str, description: str, *, consequence: str = "",
                      interrupts: bool = False):
    """An admin action over the selected nodes; one with a `consequence` asks first, naming
    every node, as Django's own "delete selected" does (and, when it `interrupts` work, the
    tenants and workloads on each)."""

    def run(modeladmin, request, queryset):
        if consequence and request.POST.get("confirm") != "yes":
            nodes = list(queryset.order_by("hostname"))
            return TemplateResponse(request, "inventory/admin/node_action_confirm.html", {
                **modeladmin.admin_site.each_context(request),
                "opts": modeladmin.model._meta,
                "title": f"{description}?",
                "nodes": nodes,
                "impacts": nodes_drain_impact(nodes=nodes) if interrupts else None,
                "action": run.__name__,
                "consequence": consequence,
                "verb": verb,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            })
        done, refused = 0, []
        for node in queryset.order_by("hostname"):
            try:
                service(node_id=node.pk, actor=request.user, reason=f"{verb} from Django admin")
                done += 1
            except DomainError as exc:  # one node refused: report it, carry on with the others
                refused.append(str(exc))
        if done:
            modeladmin.message_user(request, f"{verb.capitalize()}: {done} node(s).",
                                    messages.SUCCESS)
        for message in refused:
            modeladmin.message_user(request, message, messages.WARNING)

    run.short_description = description
    run.__name__ = f"action_{verb.replace(' ', '_')}"
    return run


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["hostname", "rack", "position", "role", "state", "bios_profile",
                    "reserved_for", "cpu_cores", "memory_gib"]
    list_filter = ["state", "role", "gpu_sharing", "bios_profile", "rack__site", "reserved_for"]
    search_fields = ["hostname", "k8s_name", "serial", "bmc_address"]
    list_select_related = ["rack__site"]
    readonly_fields = ["state", "state_changed_at", "k8s_last_seen_at", "k8s_ready",
                       "k8s_unschedulable", "k8s_conditions", "k8s_labels", "k8s_capacity",
                       "placed_pods", "gpus_in_use", "mig_in_use", "gpu_sharing",
                       "hami_devices", "hami_in_use", "disks_wiped_at",
                       "bmc_reset_at", "created_at"]
    fieldsets = [
        (None, {"fields": ["hostname", "k8s_name", "serial", "bmc_address", "role",
                           "bios_profile", "reserved_for", "cpu_cores", "memory_gib"]}),
        ("Location", {"fields": ["rack", "position", "height_units"]}),
        ("Lifecycle", {"fields": ["state", "state_changed_at", "disks_wiped_at",
                                  "bmc_reset_at"]}),
        ("Seen in the cluster", {"classes": ["collapse"], "fields": [
            "k8s_last_seen_at", "k8s_ready", "k8s_unschedulable", "k8s_conditions",
            "k8s_labels", "k8s_capacity", "placed_pods", "gpus_in_use", "mig_in_use",
            "gpu_sharing", "hami_devices", "hami_in_use"]}),
    ]
    inlines = [GPUInline, NICInline, HealthEventInline]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # nodes are retired, never deleted: their history stays

    def save_model(self, request, obj, form, change):
        records.node_details_save(actor=request.user, node=obj, changed=form.changed_data)

    def save_formset(self, request, form, formset, change):
        formset.save(commit=False)  # every inline is read-only: nothing to write

    actions = [
        _lifecycle_action(lifecycle.node_cordon, "cordon", "Cordon selected nodes"),
        _lifecycle_action(lifecycle.node_uncordon, "uncordon", "Uncordon selected nodes"),
        _lifecycle_action(
            lifecycle.node_drain, "drain", "Drain selected nodes to maintenance",
            consequence="Every pod on these nodes is evicted; tenants' jobs there are "
                        "interrupted, and the nodes take no new work until returned to service.",
            interrupts=True,
        ),
        _lifecycle_action(
            lifecycle.node_return_to_service, "return to service",
            "Return selected nodes to service",
            consequence="Every open health event of these nodes is closed and every GPU is "
                        "marked healthy; tenants' work is scheduled on them again at once.",
        ),
    ]


@admin.register(GPU)
class GPUAdmin(ReadOnlyModelAdmin):
    list_display = ["__str__", "model", "uuid", "health", "mig_capable", "ecc_dbe_count"]
    list_filter = ["model", "health", "mig_capable"]
    search_fields = ["uuid", "serial", "node__hostname"]
    list_select_related = ["node"]


@admin.register(NIC)
class NICAdmin(ReadOnlyModelAdmin):
    list_display = ["__str__", "kind", "mac_address", "ib_guid", "link_speed_gbps", "fabric",
                    "rail"]
    list_filter = ["kind", "fabric"]
    search_fields = ["mac_address", "ib_guid", "node__hostname", "name"]
    list_select_related = ["node"]


@admin.register(HealthEvent)
class HealthEventAdmin(ReadOnlyModelAdmin):
    list_display = ["opened_at", "node", "kind", "subject", "severity", "remediation",
                    "resolved_at"]
    list_filter = ["severity", "kind", "source", "remediation",
                   ("resolved_at", admin.EmptyFieldListFilter)]
    search_fields = ["node__hostname", "detail"]
    list_select_related = ["node"]
    readonly_fields = ["notified_tenants"]


@admin.register(NodeValidation)
class NodeValidationAdmin(ReadOnlyModelAdmin):
    list_display = ["node", "kind", "passed", "summary", "recorded_at", "recorded_by"]
    list_filter = ["kind", "passed"]
    list_select_related = ["node", "recorded_by"]


@admin.register(InventoryRun)
class InventoryRunAdmin(ReadOnlyModelAdmin):
    list_display = ["started_at", "kind", "ok", "finished_at", "error"]
    list_filter = ["kind", "ok"]
