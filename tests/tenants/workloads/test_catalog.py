"""The VM boot-image catalog: platform admins keep it in Django admin, through the service
(validated, audited); the VM launch form offers the active images."""

import pytest

from core.models import AuditEvent
from tenants.workloads.models import VmImage
from tenants.workloads.selectors import vm_image_catalog
from tenants.workloads.services import vm_image_save

ADD = "/admin/tenants/vmimage/add/"
FORM = {"key": "rocky-9", "label": "Rocky Linux 9", "min_disk_gib": 20, "default_user": "rocky",
        "container_disk": "quay.io/containerdisks/rocky:9", "active": "on"}


@pytest.mark.django_db
def test_an_image_added_and_changed_in_django_admin_is_audited(login, platform_admin):
    client = login(platform_admin)

    added = client.post(ADD, FORM)
    image = VmImage.objects.get(key="rocky-9")
    changed = client.post(f"/admin/tenants/vmimage/{image.pk}/change/",
                          {**FORM, "label": "Rocky Linux 9.6", "active": ""})

    assert (added.status_code, changed.status_code) == (302, 302)
    image.refresh_from_db()
    assert (image.label, image.active) == ("Rocky Linux 9.6", False)
    events = list(AuditEvent.objects.filter(object_type="tenants.vmimage").order_by("id"))
    assert [(e.action, e.actor) for e in events] == [
        ("vm_image.create", platform_admin), ("vm_image.update", platform_admin)
    ]
    assert events[1].changes == {"label": ["Rocky Linux 9", "Rocky Linux 9.6"],
                                 "active": [True, False]}
    assert vm_image_catalog() == {}  # a retired image is not offered any more


@pytest.mark.django_db
def test_an_image_the_portal_cannot_boot_is_refused(login, platform_admin):
    client = login(platform_admin)

    response = client.post(ADD, {**FORM, "container_disk": "not an image"})

    assert response.status_code == 200
    assert "container_disk" in response.context["adminform"].form.errors
    assert not VmImage.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="vm_image").exists()


@pytest.mark.django_db
def test_saving_an_unchanged_image_writes_no_audit_event():
    image = vm_image_save(actor=None, image=VmImage(**{**FORM, "active": True}))

    vm_image_save(actor=None, image=image, changed=["label"])

    assert AuditEvent.objects.filter(action__startswith="vm_image").count() == 1
    assert vm_image_catalog()["rocky-9"]["default_user"] == "rocky"
