"""The admins' catalogs for workloads: the VM boot images and the notebook images the launch
forms offer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models, transaction

from core.audit import audit

from ..models import NotebookImage, VmImage

AUDITED_FIELDS = ("key", "label", "container_disk", "min_disk_gib", "default_user", "active")
NOTEBOOK_AUDITED_FIELDS = ("key", "label", "image", "interface", "active")


def _image_save(*, actor: Any | None, image: models.Model, changed: Iterable[str],
                action: str, audited: tuple[str, ...]) -> models.Model:
    before = (
        type(image).objects.select_for_update().filter(pk=image.pk).first() if image.pk else None
    )
    image.full_clean()
    image.save()
    if before is None:
        audit(actor=actor, action=f"{action}.create", obj=image,
              changes={name: getattr(image, name) for name in audited})
        return image
    diff = {
        name: [getattr(before, name), getattr(image, name)]
        for name in changed
        if name in audited and getattr(before, name) != getattr(image, name)
    }
    if diff:
        audit(actor=actor, action=f"{action}.update", obj=image, changes=diff)
    return image


@transaction.atomic
def vm_image_save(*, actor: Any | None, image: VmImage, changed: Iterable[str] = ()) -> VmImage:
    """Add a boot image, or save the `changed` fields of one (validated first), with its audit
    event. VMs keep the image they were launched from (their spec holds it): a changed or
    retired image only changes what new VMs get."""
    return _image_save(actor=actor, image=image, changed=changed, action="vm_image",
                       audited=AUDITED_FIELDS)


@transaction.atomic
def notebook_image_save(*, actor: Any | None, image: NotebookImage,
                        changed: Iterable[str] = ()) -> NotebookImage:
    """Add a notebook image, or save the `changed` fields of one (validated first), with its
    audit event. Notebooks keep the image reference and interface they were launched with
    (their spec holds both): a changed or retired image only changes what new ones get."""
    return _image_save(actor=actor, image=image, changed=changed, action="notebook_image",
                       audited=NOTEBOOK_AUDITED_FIELDS)
