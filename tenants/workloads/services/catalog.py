"""The admins' catalog for workloads: the VM boot images the launch form offers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from core.audit import audit

from ..models import VmImage

AUDITED_FIELDS = ("key", "label", "container_disk", "min_disk_gib", "default_user", "active")


@transaction.atomic
def vm_image_save(*, actor: Any | None, image: VmImage, changed: Iterable[str] = ()) -> VmImage:
    """Add a boot image, or save the `changed` fields of one (validated first), with its audit
    event. VMs keep the image they were launched from (their spec holds it): a changed or
    retired image only changes what new VMs get."""
    before = (
        VmImage.objects.select_for_update().filter(pk=image.pk).first() if image.pk else None
    )
    image.full_clean()
    image.save()
    if before is None:
        audit(actor=actor, action="vm_image.create", obj=image,
              changes={name: getattr(image, name) for name in AUDITED_FIELDS})
        return image
    diff = {
        name: [getattr(before, name), getattr(image, name)]
        for name in changed
        if name in AUDITED_FIELDS and getattr(before, name) != getattr(image, name)
    }
    if diff:
        audit(actor=actor, action="vm_image.update", obj=image, changes=diff)
    return image
