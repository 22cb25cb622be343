from django.contrib import admin

from .models import Membership, Quota, RoleAssignment, Tenant


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


class QuotaInline(admin.TabularInline):
    model = Quota
    extra = 0


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "isolation", "status", "cost_center", "monthly_budget"]
    list_filter = ["isolation", "status"]
    search_fields = ["name", "slug", "cost_center"]
    inlines = [MembershipInline, QuotaInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role", "source", "created_at"]
    list_filter = ["role", "source", "tenant"]
    search_fields = ["user__username", "user__email", "tenant__slug"]
    list_select_related = ["user", "tenant"]
    autocomplete_fields = ["user"]


@admin.register(RoleAssignment)
class RoleAssignmentAdmin(admin.ModelAdmin):
    list_display = ["user", "role", "source", "created_at"]
    list_filter = ["role", "source"]
    search_fields = ["user__username"]
    list_select_related = ["user"]
    autocomplete_fields = ["user"]
