"""The workloads API: list, launch (and check a launch), follow, scale, power, delete, the
timeline, its GPUs' use and a vCluster's kubeconfig, with the pages' rules.

Another tenant's workload is not found (404) on every path, exactly as in the pages; a role
that may see but not act (viewers, finance) gets 403; bad input gets 400 with the services'
field errors (`name`, `kind`, `spec.<field>`, `quota`, `tenant`). Launch, scale, power and
delete answer 202 Accepted: the cluster follows after commit, and the workload's `url` (also the
launch's `Location`) shows how far it got.
"""

from __future__ import annotations

import django_filters
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.filtering import FormOnceFilterSet
from core.api.pagination import CountStamp
from core.api.scopes import Scope
from core.errors import RuleViolation
from core.queueing import DEFERRED_NOTICE, tasks_deferred_now

from ..access.rules import access_for, tenants_operated_by
from ..api.lookups import operated_tenant
from . import services
from .gpu_metrics import workload_gpu_metrics
from .gpu_metrics_serializers import GpuMetricsQuerySerializer, GpuMetricsSerializer
from .models import OPEN_EPISODE_STATES, IdleEpisode, Workload, WorkloadStatus
from .placement import placement_options
from .registry import CHOICES as KIND_CHOICES
from .selectors import (
    demand_preview,
    workload_events,
    workload_get_for_user,
    workload_idle_episode,
    workloads_listed_to,
    workloads_visible_to,
)
from .serializers import (
    KeepRunningSerializer,
    WorkloadCheckResultSerializer,
    WorkloadCheckSerializer,
    WorkloadEventSerializer,
    WorkloadLaunchSerializer,
    WorkloadPowerSerializer,
    WorkloadScaleSerializer,
    WorkloadSerializer,
)
from .services.lifecycle import workload_check_name, workload_validate

H100 = "gpu:nvidia-h100-80gb"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJxzqTKk2PRhAenYTuIaHAg1JffULaOZPmUUr46ou8oH alice"
LAUNCH_EXAMPLES = [
    OpenApiExample(
        "vCluster",
        summary="A vCluster: a Kubernetes control plane of your own",
        description="Every field is optional (Kubernetes 1.35, 2 vCPUs, 4 GiB by default); "
        "`gpu_scheduling` lets its pods use your tenant's GPUs.",
        value={
            "tenant": "acme",
            "kind": "vcluster",
            "name": "dev-cluster",
            "spec": {"kubernetes_version": "1.35", "gpu_scheduling": False, "cpu": 2,
                     "memory_gib": 4},
        },
        request_only=True,
    ),
    OpenApiExample(
        "Inference endpoint",
        summary="An inference endpoint: a model served by vLLM",
        description="`model_uri` is hf://org/model[:revision], s3://bucket/path or "
        "pvc://claim/path; quota is held for `max_replicas` times `gpus_per_replica` GPUs.",
        value={
            "tenant": "acme",
            "kind": "inference",
            "name": "chat",
            "label": "support-bot",
            "spec": {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": H100,
                     "gpus_per_replica": 1, "min_replicas": 1, "max_replicas": 2},
        },
        request_only=True,
    ),
    OpenApiExample(
        "Virtual machine",
        summary="A virtual machine with a whole GPU by passthrough",
        description="`image` is a key of the platform's boot images; or give `custom_image` "
        "(an OCI container-disk reference) with `default_user`. `ssh_public_key` is one "
        "OpenSSH public key; `gpu` and `gpus` are optional.",
        value={
            "tenant": "acme",
            "kind": "vm",
            "name": "workstation",
            "spec": {"image": "ubuntu-24.04", "cpu": 4, "memory_gib": 16, "disk_gib": 40,
                     "gpu": H100, "gpus": 1, "ssh_public_key": SSH_KEY},
        },
        request_only=True,
    ),
    OpenApiExample(
        "Slurm cluster",
        summary="A Slurm cluster of GPU workers with a login node",
        description="`workers` may be 0..256; `accounting` (slurmdbd), `rest_api` "
        "(slurmrestd) and root's `ssh_public_key` on the login node are optional.",
        value={
            "tenant": "acme",
            "kind": "slurm",
            "name": "training",
            "spec": {"workers": 1, "gpu": H100, "gpus_per_worker": 1, "cpu_per_worker": 8,
                     "memory_gib_per_worker": 64, "accounting": False, "rest_api": False},
        },
        request_only=True,
    ),
    OpenApiExample(
        "Notebook",
        summary="A notebook: JupyterLab or VS Code on a GPU, with your home volume",
        description="`image` is a key of the platform's notebook images; where your tenant "
        "may, give `custom_image` (an OCI reference) and `interface` (`jupyterlab` or "
        "`code-server`) instead. `gpu` is optional: `gpu:<model>` with `gpus`, "
        "`mig:<model>:<profile>`, or `hami:<model>` with `gpu_memory_gib` and `gpu_cores`. "
        "Your home volume is mounted at your home directory; it is not a field.",
        value={
            "tenant": "acme",
            "kind": "notebook",
            "name": "explore",
            "spec": {"image": "pytorch", "cpu": 4, "memory_gib": 16, "gpu": H100, "gpus": 1},
        },
        request_only=True,
    ),
]
ACCEPTED = OpenApiResponse(
    WorkloadSerializer,
    description="Accepted: the cluster follows; poll the workload's `url`. While the task queue "
    "is unreachable the change is saved all the same and the answer carries a `notice` saying "
    "that its follow-up waits for the queue (it is carried out once the queue is back).",
)
LOCATION = OpenApiParameter(
    "Location", OpenApiTypes.URI, OpenApiParameter.HEADER, response=[202],
    description="The launched workload's URL.",
)


class WorkloadFilter(FormOnceFilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="A tenant's slug.")
    kind = django_filters.ChoiceFilter(choices=KIND_CHOICES)
    cluster = django_filters.CharFilter(field_name="cluster_id",
                                        help_text="The slug of the cluster it runs on.")
    status = django_filters.ChoiceFilter(
        choices=WorkloadStatus.choices, help_text="Deleted workloads are listed only with "
        "status=deleted."
    )
    label = django_filters.CharFilter(help_text="The label it was launched with (exactly).")

    class Meta:
        model = Workload
        fields = ["tenant", "kind", "cluster", "status", "label"]

    def filter_queryset(self, queryset: QuerySet[Workload]) -> QuerySet[Workload]:
        workloads = super().filter_queryset(queryset)
        if not self.form.cleaned_data.get("status"):
            workloads = workloads.exclude(status=WorkloadStatus.DELETED)
        return workloads


class KubeconfigRenderer(BaseRenderer):
    """A kubeconfig as the cluster holds it: YAML text, passed through."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return data.encode(self.charset) if isinstance(data, str) else b""


class WorkloadViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Workloads of the tenants you may see: vClusters, inference endpoints, virtual machines,
    Slurm clusters and notebooks. Owners and members (and platform admins) launch, scale, power and
    delete them; viewers and finance read."""

    write_scope = Scope.WORKLOADS
    # A vCluster's kubeconfig is its admin credential: downloading it is operating the
    # workload, never a read.
    action_scopes = {"kubeconfig": Scope.WORKLOADS}

    serializer_class = WorkloadSerializer
    filterset_class = WorkloadFilter
    queryset = Workload.objects.none()

    def get_queryset(self) -> QuerySet[Workload]:
        if getattr(self, "swagger_fake_view", False):
            return Workload.objects.none()
        open_idle = Prefetch("idle_episodes", to_attr="open_idle",
                             queryset=IdleEpisode.objects.filter(state__in=OPEN_EPISODE_STATES))
        if self.action == "list":
            return workloads_listed_to(self.request.user).prefetch_related(open_idle)
        return workloads_visible_to(self.request.user).prefetch_related(open_idle)

    def paginate_queryset(self, queryset):
        if self.action == "list" and self.paginator is not None:
            # The list's count (every live workload, 20,000 at fleet scale, for those who see
            # all) is kept until a workload or tenant is written: the same visible tenants
            # and the same filters count the same rows.
            access = access_for(self.request.user)
            filters = sorted((name, tuple(values))
                             for name, values in self.request.query_params.lists()
                             if name in WorkloadFilter.base_filters)
            self.paginator.count_stamp = CountStamp(
                name="workloads", tables=("tenants_workload", "tenants_tenant"),
                extra=(None if access.sees_all_tenants else sorted(access.tenant_roles), filters),
            )
        return super().paginate_queryset(queryset)

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        renderer = getattr(self.request, "accepted_renderer", None)
        if renderer is None or isinstance(renderer, KubeconfigRenderer):
            # The one error format is JSON, also where the answer would have been YAML.
            self.request.accepted_renderer = JSONRenderer()
            self.request.accepted_media_type = JSONRenderer.media_type
        return response

    def _workload(self, pk: str) -> Workload:
        return workload_get_for_user(user=self.request.user, workload_id=int(pk))

    def _operated(self, pk: str, what: str) -> Workload:
        """The workload (404 first: another tenant's is not there), if the caller may act on
        it; 403 for a role that only reads, before its body is even looked at."""
        workload = self._workload(pk)
        if not tenants_operated_by(self.request.user).filter(pk=workload.tenant_id).exists():
            raise PermissionDenied(f"Only the tenant's owners and members {what}.")
        return workload

    def _render(self, workload: Workload, *, code: int = status.HTTP_200_OK) -> Response:
        data = WorkloadSerializer(workload, context=self.get_serializer_context()).data
        return Response(data, status=code)

    def _accepted(self, pk: int) -> Response:
        """202 with the workload as it stands after the service's transaction, and the page's
        notice when its follow-up could not be queued (the broker is down: the sweeps will)."""
        workload = workloads_visible_to(self.request.user).get(pk=pk)
        response = self._render(workload, code=status.HTTP_202_ACCEPTED)
        if tasks_deferred_now():
            response.data["notice"] = DEFERRED_NOTICE
        return response

    @extend_schema(
        request=WorkloadLaunchSerializer,
        responses={202: ACCEPTED},
        parameters=[LOCATION],
        examples=LAUNCH_EXAMPLES,
    )
    def create(self, request: Request) -> Response:
        """Launch a workload: admitted against the tenant's quota, provisioned after commit.
        The answer's `Location` is the workload's URL."""
        tenant = operated_tenant(request.user, request.data, what="launch workloads")
        body = WorkloadLaunchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        workload = services.workload_launch(
            tenant=tenant, actor=request.user, kind=data["kind"], name=data["name"],
            spec=data["spec"], cluster=data.get("cluster") or None,
            label=data.get("label", ""),
        )
        response = self._accepted(workload.pk)
        # A plain str: the serializer's URL is DRF's Hyperlink, which strict WSGI servers
        # (wsgiref's header check) refuse as a header value.
        response["Location"] = str(response.data["url"])
        return response

    @extend_schema(responses=WorkloadSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        """One workload, with what the cluster last said of it."""
        workload = self._workload(pk)
        # As the page does: while it is in progress, ask for a fresh look (at most every few
        # seconds); in eager mode (the demo) that look has already happened here.
        if services.workload_refresh(workload=workload):
            workload = self._workload(pk)
        return self._render(workload)

    @extend_schema(request=None, responses={202: ACCEPTED})
    def destroy(self, request: Request, pk: str) -> Response:
        """Delete it: its objects are removed from the cluster, and its quota is released once
        they are confirmed gone. Deleting one already deleting is a 409."""
        workload = self._operated(pk, "delete workloads")
        services.workload_delete(workload_id=workload.pk, actor=request.user)
        return self._accepted(workload.pk)

    @extend_schema(
        request=WorkloadScaleSerializer,
        responses={202: ACCEPTED},
        examples=[
            OpenApiExample("More inference replicas", value={"changes": {"max_replicas": 3}},
                           request_only=True),
            OpenApiExample("More Slurm workers", value={"changes": {"workers": 4}},
                           request_only=True),
        ],
    )
    @action(detail=True, methods=["post"])
    def scale(self, request: Request, pk: str) -> Response:
        """Resize it (replicas, workers, vCPUs…); a scale-up is admitted against the quota."""
        workload = self._operated(pk, "scale workloads")
        body = WorkloadScaleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.workload_scale(
            workload_id=workload.pk, actor=request.user, changes=body.validated_data["changes"]
        )
        return self._accepted(workload.pk)

    @extend_schema(request=WorkloadPowerSerializer, responses={202: ACCEPTED})
    @action(detail=True, methods=["post"])
    def power(self, request: Request, pk: str) -> Response:
        """Start, stop or restart a virtual machine; start or stop a notebook (its home volume
        is kept). Other kinds have no power actions, and a notebook no restart: 400."""
        workload = self._operated(pk, "start and stop workloads")
        body = WorkloadPowerSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.workload_power(
            workload_id=workload.pk, actor=request.user, action=body.validated_data["action"]
        )
        return self._accepted(workload.pk)

    @extend_schema(request=KeepRunningSerializer, responses=WorkloadSerializer)
    @action(detail=True, methods=["post"], url_path="keep-running")
    def keep_running(self, request: Request, pk: str) -> Response:
        """Mark it "keep running" with a reason (the idle policy never warns about it nor acts
        on it), or clear the mark with an empty reason. Audited."""
        workload = self._operated(pk, "mark workloads")
        body = KeepRunningSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.workload_keep_running(workload_id=workload.pk, actor=request.user,
                                       reason=body.validated_data["reason"])
        return self._render(self.get_queryset().get(pk=workload.pk))

    @extend_schema(request=None, responses={202: ACCEPTED})
    @action(detail=True, methods=["post"], url_path="idle-undo")
    def idle_undo(self, request: Request, pk: str) -> Response:
        """Undo what the idle policy did to it: the size it had, or the VM started again
        (admitted against the quota like a scale-up). Nothing to undo is a 400."""
        workload = self._operated(pk, "undo the idle policy")
        episode = workload_idle_episode(workload=workload)
        if episode is None or episode.state != IdleEpisode.State.ACTED:
            raise RuleViolation("The idle policy has not acted on it: there is nothing to undo.")
        services.idle_undo(episode_id=episode.pk, actor=request.user)
        return self._accepted(workload.pk)

    @extend_schema(responses=WorkloadEventSerializer(many=True))
    @action(detail=True, methods=["get"], filter_backends=[])
    def events(self, request: Request, pk: str) -> Response:
        """Its timeline, newest first: state changes, scales, power actions, cluster errors."""
        workload = self._workload(pk)
        page = self.paginate_queryset(workload_events(workload=workload))
        return self.get_paginated_response(WorkloadEventSerializer(page, many=True).data)

    @extend_schema(
        parameters=[GpuMetricsQuerySerializer],
        responses={
            200: GpuMetricsSerializer,
            503: OpenApiResponse(description="Prometheus did not answer: try again."),
        },
    )
    @action(detail=True, methods=["get"], url_path="gpu-metrics", filter_backends=[],
            pagination_class=None)
    def gpu_metrics(self, request: Request, pk: str) -> Response:
        """Its GPUs' utilization, memory used and power over a period up to now, per GPU of
        its pods, from DCGM in Prometheus (the workload page's GPU use card). Without GPUs,
        without Prometheus, or before its pods have run, `state` says why `gpus` is empty."""
        workload = self._workload(pk)
        query = GpuMetricsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        metrics = workload_gpu_metrics(workload=workload, period=query.validated_data["period"])
        return Response(GpuMetricsSerializer(metrics).data)

    @extend_schema(
        responses={
            (200, KubeconfigRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description="The vCluster's kubeconfig (a YAML document)."
            ),
            400: OpenApiResponse(description="Not a vCluster, not ready yet (no kubeconfig on "
                                 "the cluster yet), or bad input."),
            503: OpenApiResponse(description="The cluster did not answer: try again."),
        }
    )
    @action(detail=True, methods=["get"], renderer_classes=[KubeconfigRenderer],
            filter_backends=[])
    def kubeconfig(self, request: Request, pk: str) -> Response:
        """A ready vCluster's kubeconfig, read from the cluster now (every download is
        audited). Owners and members only; a token needs the `workloads` scope (it is the
        vCluster's admin credential)."""
        workload = self._operated(pk, "download kubeconfigs")
        kubeconfig = services.workload_kubeconfig(workload=workload, actor=request.user)
        return Response(kubeconfig, headers={
            "Content-Disposition": f'attachment; filename="vcluster-{workload.name}.yaml"',
            "Cache-Control": "no-store",
        })

    @extend_schema(
        request=WorkloadCheckSerializer,
        responses=WorkloadCheckResultSerializer,
        examples=LAUNCH_EXAMPLES,
    )
    @action(detail=False, methods=["post"], pagination_class=None, filter_backends=[])
    def check(self, request: Request) -> Response:
        """Check a launch without launching: the clean spec, what it would hold and what that
        leaves of the tenant's quota (the launch page's live preview)."""
        tenant = operated_tenant(request.user, request.data, what="launch workloads")
        body = WorkloadCheckSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        kind = body.validated_data["kind"]
        if body.validated_data.get("name"):
            workload_check_name(tenant=tenant, name=body.validated_data["name"])
        clean, demand = workload_validate(
            tenant=tenant, kind=kind, spec=body.validated_data["spec"],
            person=request.user.get_username(),
        )
        lines = demand_preview(tenant=tenant, demand=demand)
        placement = placement_options(tenant=tenant, demand=demand)
        result = {
            "kind": kind,
            "spec": clean,
            "demand": demand,
            "quota": lines,
            "fits": all(line.fits or line.asked <= 0 for line in lines),
            "clusters": placement.options,
            "unplaced": "" if placement.options else placement.error().messages[0],
        }
        return Response(WorkloadCheckResultSerializer(result).data)
