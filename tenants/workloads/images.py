"""The images platform admins offer: VM boot images and notebook images (the launch forms list
the active ones; the kinds read them from the launch context's catalog)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from core.validators import validate_readable_name

from .kinds.base import SpecError
from .kinds.image_references import oci_reference


def validate_oci_reference(value: str) -> None:
    try:
        oci_reference(value, field_name="container_disk")
    except SpecError as exc:
        raise ValidationError(exc.fields["container_disk"]) from None


class VmImage(models.Model):
    """A boot image platform admins offer for virtual machines (the VM launch form lists them)."""

    key = models.SlugField(max_length=50, unique=True)
    label = models.CharField(max_length=100, validators=[validate_readable_name])
    container_disk = models.CharField(
        "container disk image", max_length=500, validators=[validate_oci_reference],
        help_text="An OCI image reference of a KubeVirt container disk, e.g. "
                  "quay.io/containerdisks/ubuntu:24.04",
    )
    min_disk_gib = models.PositiveIntegerField(default=20)
    default_user = models.CharField(
        max_length=32, default="ubuntu", help_text="The user cloud-init gives the SSH key to."
    )
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["label"]
        verbose_name = "VM boot image"

    def __str__(self) -> str:
        return self.label

    def as_catalog_entry(self) -> dict:
        return {
            "label": self.label,
            "container_disk": self.container_disk,
            "min_disk_gib": self.min_disk_gib,
            "default_user": self.default_user,
        }


class NotebookImage(models.Model):
    """An image platform admins offer for notebooks (the notebook launch form lists them).

    Its interface says how the portal starts it and where the home volume goes: JupyterLab
    images follow the Jupyter Docker Stacks' conventions, VS Code images code-server's
    (`tenants.workloads.kinds.notebook`)."""

    class Interface(models.TextChoices):
        JUPYTERLAB = "jupyterlab", "JupyterLab"
        CODE_SERVER = "code-server", "VS Code (code-server)"

    key = models.SlugField(max_length=50, unique=True)
    label = models.CharField(max_length=100, validators=[validate_readable_name])
    image = models.CharField(
        max_length=500, validators=[validate_oci_reference],
        help_text="An OCI image reference, e.g. quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10",
    )
    interface = models.CharField(max_length=20, choices=Interface.choices,
                                 default=Interface.JUPYTERLAB)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["label"]
        verbose_name = "notebook image"

    def __str__(self) -> str:
        return self.label

    def as_catalog_entry(self) -> dict:
        return {"label": self.label, "image": self.image, "interface": self.interface}
