"""The Kubernetes clusters the portal drives: each a failure domain of its own, in a site.

A cluster is data: platform admins add one (Django admin), with where its credentials are, never
the credentials themselves. The slug names it everywhere else: the fleet gateway's pool, the
Celery queue its reconcile work goes to, the `cluster` of nodes and workloads (which reference
it by slug, so reading one needs no join).

`state` is the admins' word (active, draining: no new placements, retired: no work at all).
Reachability is the portal's own observation, kept apart: a cluster that stops answering is
marked unreachable with a backoff, and marked reachable again at its first answer, whatever
state the admins gave it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from core.choices import ColoredChoices, colored
from core.queueing import cluster_queue
from core.validators import validate_dns1123_label, validate_readable_name

from .site import Site


@colored({"active": "success", "draining": "warning", "retired": "dark"})
class ClusterState(ColoredChoices):
    ACTIVE = "active", "Active"
    DRAINING = "draining", "Draining"
    RETIRED = "retired", "Retired"


class Credentials(models.TextChoices):
    """Where the gateway finds how to reach a cluster (a real fleet; the simulated one needs
    none)."""

    ENVIRONMENT = "environment", "The portal's own (in-cluster account, or KUBECONFIG)"
    KUBECONFIG = "kubeconfig", "A kubeconfig file on the portal's hosts"
    SECRET = "secret", "A Secret holding a kubeconfig, in the portal's namespace"


# The cluster a single-cluster install has (the first migration creating clusters adds it, with
# the portal's own credentials): nodes and workloads from before clusters were data are its.
DEFAULT_CLUSTER = "main"
# How a cluster shows when its reachability overrides what the admins set.
UNREACHABLE = "unreachable"


class ClusterQuerySet(models.QuerySet):
    def in_service(self) -> ClusterQuerySet:
        """Clusters that hold work: every one that is not retired."""
        return self.exclude(state=ClusterState.RETIRED)

    def placeable(self) -> ClusterQuerySet:
        """Clusters that take new work: active and answering."""
        return self.filter(state=ClusterState.ACTIVE, reachable=True)


class Cluster(models.Model):
    State = ClusterState
    Credentials = Credentials

    slug = models.CharField(
        max_length=40,
        unique=True,
        validators=[validate_dns1123_label],
        help_text="Names the cluster in the portal, its task queue and its objects' "
        "labels; it cannot change once the cluster holds work.",
    )
    name = models.CharField(max_length=100, validators=[validate_readable_name])
    site = models.ForeignKey(
        Site, on_delete=models.PROTECT, related_name="clusters", null=True, blank=True
    )
    api_server = models.URLField(
        "API server",
        blank=True,
        help_text="Shown to people; the connection itself comes from the credentials.",
    )
    credentials = models.CharField(
        max_length=20, choices=Credentials.choices, default=Credentials.ENVIRONMENT
    )
    kubeconfig_path = models.CharField(
        "kubeconfig path", max_length=500, blank=True,
        help_text="A kubeconfig file readable by the portal's web and worker processes.",
    )
    kube_context = models.CharField(
        "kubeconfig context", max_length=253, blank=True,
        help_text="The context to use (empty: the file's current context).",
    )
    secret_name = models.CharField(
        max_length=253, blank=True, validators=[validate_dns1123_label],
        help_text="A Secret in the portal's own namespace whose key “kubeconfig” holds it.",
    )
    prometheus_url = models.URLField(
        "Prometheus URL", blank=True,
        help_text="The Prometheus that scrapes this cluster's DCGM exporters (one per cluster or "
        "per site); empty: the fleet's (PROMETHEUS_URL).",
    )
    state = models.CharField(
        max_length=20, choices=ClusterState.choices, default=ClusterState.ACTIVE, db_index=True
    )
    # What the portal observed (never edited by people).
    reachable = models.BooleanField(default=True, editable=False)
    unreachable_since = models.DateTimeField(null=True, blank=True, editable=False)
    failures = models.PositiveIntegerField(default=0, editable=False)
    next_probe_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    last_contact_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = ClusterQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.credentials == Credentials.KUBECONFIG and not self.kubeconfig_path:
            raise ValidationError({"kubeconfig_path": "Name the kubeconfig file."})
        if self.credentials == Credentials.SECRET and not self.secret_name:
            raise ValidationError({"secret_name": "Name the Secret."})

    @property
    def status(self) -> str:
        """What pages show: unreachable wins over the admins' state, except for a retired
        cluster (nobody waits on it)."""
        if not self.reachable and self.state != ClusterState.RETIRED:
            return UNREACHABLE
        return self.state

    @property
    def status_label(self) -> str:
        return "Unreachable" if self.status == UNREACHABLE else self.get_state_display()

    @property
    def status_color(self) -> str:
        return "danger" if self.status == UNREACHABLE else ClusterState.color(self.state)

    @property
    def unreachable_note(self) -> str:
        """What pages say of its work while it does not answer: since when and why ("" while
        it answers)."""
        if self.status != UNREACHABLE:
            return ""
        since = (f" since {self.unreachable_since:%Y-%m-%d %H:%M UTC}"
                 if self.unreachable_since else "")
        why = f": {self.last_error}" if self.last_error else ""
        return f"cluster {self.name} unreachable{since}{why}"

    @property
    def task_queue(self) -> str:
        """The Celery queue this cluster's reconcile work goes to."""
        return cluster_queue(self.slug)
