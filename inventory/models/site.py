"""Where the hardware stands: sites and their racks."""

from django.db import models

from core.validators import validate_readable_name


class Site(models.Model):
    """A data centre or hall that holds racks."""

    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=100, validators=[validate_readable_name])
    region = models.CharField(max_length=100, blank=True, validators=[validate_readable_name])

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Rack(models.Model):
    """A rack in a site; nodes occupy its units from `position` upwards."""

    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="racks")
    name = models.CharField(max_length=50, validators=[validate_readable_name])
    units = models.PositiveSmallIntegerField(default=42)
    row = models.CharField(
        max_length=50,
        blank=True,
        help_text="Row or aisle in the site.",
        validators=[validate_readable_name],
    )

    class Meta:
        ordering = ["site__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["site", "name"], name="unique_rack_per_site")
        ]

    def __str__(self) -> str:
        return f"{self.site.slug}/{self.name}"
