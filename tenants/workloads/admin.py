"""Django admin for the workloads' catalog: the VM boot images platform admins offer.

Every save goes through a service (validation, audit event). Images are retired by unticking
`active`, not deleted: the audit trail and the VMs launched from one keep its name.
"""

from django.contrib import admin

from .models import VmImage
from .services.catalog import vm_image_save


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
