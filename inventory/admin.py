from django.contrib import admin

from .models import GPU, Node, Rack, Site


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "region"]
    search_fields = ["name", "slug"]


@admin.register(Rack)
class RackAdmin(admin.ModelAdmin):
    list_display = ["name", "site", "units"]
    list_filter = ["site"]
    list_select_related = ["site"]


class GPUInline(admin.TabularInline):
    model = GPU
    extra = 0


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["hostname", "rack", "role", "state", "reserved_for", "cpu_cores", "memory_gib"]
    list_filter = ["state", "role", "rack__site", "reserved_for"]
    search_fields = ["hostname", "k8s_name", "serial"]
    list_select_related = ["rack__site"]
    inlines = [GPUInline]


@admin.register(GPU)
class GPUAdmin(admin.ModelAdmin):
    list_display = ["__str__", "model", "uuid", "health", "mig_capable"]
    list_filter = ["model", "health", "mig_capable"]
    search_fields = ["uuid", "node__hostname"]
    list_select_related = ["node"]
