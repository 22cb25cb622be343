"""The launch and scale forms, one per kind. They only collect input: every rule (ranges, the
GPU classes a tenant may use, quota) is the kind's and the services', whose field errors come
back onto these forms' fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from core.forms import FieldsFromTemplate
from inventory import resource_classes

from ..access.models import Tenant
from .kinds import gpu_input, inference, notebook, vcluster
from .kinds.base import LaunchContext
from .kinds.inference import credential as inference_credential
from .kinds.slurm import spec as slurm_spec
from .kinds.vm import spec as vm_spec
from .models import IdlePolicy, NotebookImage
from .placement import Placement

NUMBER = {"class": "form-control", "inputmode": "numeric"}
TEXT = {"class": "form-control", "autocomplete": "off", "spellcheck": "false"}
SELECT = {"class": "form-select"}
CHECK = {"class": "form-check-input", "role": "switch"}
NO_GPU = ""
PORTAL_CHOICE = ""


def _number(label: str, *, minimum: int, maximum: int, initial: int | None, help_text: str = ""):
    return forms.CharField(
        label=label, initial=initial, required=initial is None, help_text=help_text,
        widget=forms.NumberInput(attrs={**NUMBER, "min": minimum, "max": maximum}),
    )


def _flag(label: str, *, initial: bool, help_text: str = ""):
    return forms.BooleanField(label=label, initial=initial, required=False, help_text=help_text,
                              widget=forms.CheckboxInput(attrs=CHECK))


def _hami_memory(label: str, help_text: str):
    return forms.CharField(
        label=label, required=False, help_text=help_text,
        widget=forms.NumberInput(attrs={**NUMBER, "min": gpu_input.MIN_GPU_MEMORY_GIB}),
    )


def _hami_cores(label: str):
    return forms.CharField(
        label=label, required=False,
        help_text=f"Percent of one GPU's compute, {resource_classes.HAMI_MIN_CORES} to 100.",
        widget=forms.NumberInput(
            attrs={**NUMBER, "min": resource_classes.HAMI_MIN_CORES, "max": 100}
        ),
    )


class WorkloadForm(forms.Form):
    """The fields common to every launch: the name and a cost label. Kinds add theirs."""

    name = forms.CharField(
        max_length=63, help_text="Lowercase letters, digits and '-': it names the objects on "
        "the cluster, and must be unique in your tenant.",
        widget=forms.TextInput(attrs={**TEXT, "placeholder": "e.g. chat-prod"}),
    )
    label = forms.CharField(
        required=False, max_length=63, label="Cost label",
        help_text="Optional: a project or experiment. Cost is broken down by it on the spend "
        "page.",
        widget=forms.TextInput(attrs={**TEXT, "placeholder": "e.g. llama-finetune"}),
    )
    SPEC_FIELDS: tuple[str, ...] = ()

    def __init__(self, *args, tenant: Tenant, context: LaunchContext, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.tenant, self.context = tenant, context
        self.gpu_notes: list[str] = []
        # The clusters are offered once the demand is known (`offer_clusters`); whether the
        # one picked is an option is the placement service's to say, under the tenant's lock.
        self.fields["cluster"] = forms.CharField(
            required=False, max_length=40,
            widget=forms.Select(attrs=SELECT, choices=[(PORTAL_CHOICE, "Let the portal choose")]),
            help_text="Where it runs, for good: moving it later is deleting and launching it "
            "again. The portal picks your reserved nodes first, then the most free room. The "
            "price is the same on every cluster.",
        )

    def offer_clusters(self, placement: Placement, *, sized: bool = True) -> None:
        """Offer the clusters `placement` allows, each with its site and room, the portal's
        choice named; with none, say why on the field. `sized=False`: the demand is not known
        yet (the form is not filled in), so neither is the room nor the choice."""
        choice = placement.choice if sized else None
        self.fields["cluster"].widget.choices = [
            (PORTAL_CHOICE, "Let the portal choose" + (f" (now: {choice.name})" if choice else "")),
            *((o.cluster, f"{o.name}{f' · {o.site}' if o.site else ''}"
               + (f" — {o.room_label}" if sized else "")) for o in placement.options),
        ]
        if sized and choice is None and "cluster" not in self.errors:
            self.add_service_errors(placement.error())

    @property
    def cluster(self) -> str | None:
        """The cluster picked, None for the portal's choice."""
        return (self.cleaned_data.get("cluster") or None) if hasattr(self, "cleaned_data") else None

    def spec(self) -> dict[str, Any]:
        data = self.cleaned_data if hasattr(self, "cleaned_data") else {}
        return {name: data.get(name) for name in self.SPEC_FIELDS
                if data.get(name) not in (None, "")}

    CUSTOM = "__custom__"  # the image choice of a kind whose people may bring their own

    def catalog_or_custom(self, spec: dict[str, Any], *, custom: tuple[str, ...]) -> dict:
        """`spec` with the admins' image, or (CUSTOM picked) with the `custom` fields of one's
        own image instead: never both, which the kinds refuse."""
        if spec.get("image") == self.CUSTOM:
            spec.pop("image")
        else:
            for name in custom:
                spec.pop(name, None)
        return spec

    def add_service_errors(self, exc: ValidationError) -> None:
        """Put the services' field errors (`spec.<field>`, `name`, `quota`) on the fields."""
        for key, messages in exc.message_dict.items():
            name = key.removeprefix("spec.")
            field = name if name in self.fields else None
            for message in messages:
                self.add_error(field, message)

    def fit_gpu_fields(self, *, count: str, after: list[str]) -> str:
        """Keep the fields the picked GPU needs (the form re-renders as the person changes it):
        a HAMi share's memory and compute, asked right after it (`after` ends with the GPU
        field), instead of the `count` of GPUs (one vGPU); a whole GPU or a MIG instance has no
        share to size. The picked GPU ("": none)."""
        choices = self.fields["gpu"].choices
        picked = self.data.get("gpu") if self.is_bound else self.initial.get("gpu")
        if picked is None and choices:
            picked = choices[0][0]
        picked = str(picked or "")
        if resource_classes.parse_hami_gpu(picked) is None:
            for name in gpu_input.HAMI_FIELDS:
                del self.fields[name]
        else:
            del self.fields[count]
            self.order_fields([*after, *gpu_input.HAMI_FIELDS])
        return picked

    # -- GPU choices: only what the tenant's isolation, pool and quota allow, and why not --

    def gpu_choices(
        self,
        *,
        kinds: tuple[str, ...] = ("gpu", "mig", "hami"),
        optional: bool = False,
        refused: str = "",
    ) -> list[tuple]:
        """The GPU classes of the tenant's pool this workload can use (`kinds`), each with its
        quota; the rest are left out with a note saying why. A model HAMi shares is one choice,
        `hami:<model>`, holding both of its classes (memory and compute)."""
        choices = [(NO_GPU, "No GPUs")] if optional else []
        for offer in self.context.gpu_offers:
            kind = offer.resource.split(":", 1)[0]
            if kind not in kinds or kind == "hami":
                continue
            limit = self.context.quota.get(offer.resource, 0)
            if limit <= 0:
                self.gpu_notes.append(f"{offer.label}: in your pool, but your tenant has no "
                                      "quota for it (ask on the quota page).")
                continue
            choices.append((offer.resource, f"{offer.label} — up to {offer.max_per_node} per "
                                            f"node, quota {limit:,}"))
        hami_models = self.context.hami_models()
        for model_key in hami_models if "hami" in kinds else ():
            memory, cores = self.context.hami_offer(model_key)
            name = resource_classes.GPU_MODELS[model_key].display_name
            limits = (self.context.quota.get(memory.resource, 0),
                      self.context.quota.get(cores.resource, 0))
            if min(limits) <= 0:
                self.gpu_notes.append(f"{name} shared through HAMi: in your pool, but your "
                                      "tenant needs quota for both its HAMi GPU memory and "
                                      "compute (ask on the quota page).")
                continue
            choices.append((resource_classes.hami_gpu(model_key),
                            f"{name} shared through HAMi — up to {memory.max_per_node} GiB and "
                            f"{cores.max_per_node} % of one GPU per replica, quota "
                            f"{limits[0]:,} GiB · {limits[1]:,} %"))
        if not self.context.partitions_allowed:
            self.gpu_notes.append("MIG partitions and HAMi shares are not offered: dedicated "
                                  "tenants get whole GPUs on their reserved nodes only.")
        if refused and (hami_models or any(o.resource.startswith("mig:")
                                           for o in self.context.gpu_offers)):
            self.gpu_notes.append(refused)
        if not self.context.gpu_offers:
            self.gpu_notes.append("Your pool has no GPU nodes right now.")
        return choices


class VClusterForm(WorkloadForm):
    SPEC_FIELDS = vcluster.FIELDS
    kubernetes_version = forms.ChoiceField(
        choices=[(v, f"Kubernetes {v}") for v in vcluster.SUPPORTED_VERSIONS],
        initial=vcluster.DEFAULT_VERSION, widget=forms.Select(attrs=SELECT),
        help_text="Later upgrades go up one minor version at a time.",
    )
    gpu_scheduling = _flag(
        "Pods may use the tenant's GPUs", initial=False,
        help_text="Pods inside the vCluster schedule on your GPU nodes (counted against your "
        "namespace's GPU quota).",
    )
    cpu = _number("Control plane vCPUs", minimum=1, maximum=vcluster.MAX_CPU,
                  initial=vcluster.DEFAULT_CPU)
    memory_gib = _number("Control plane memory (GiB)", minimum=1,
                         maximum=vcluster.MAX_MEMORY_GIB, initial=vcluster.DEFAULT_MEMORY_GIB)


class InferenceForm(WorkloadForm):
    SPEC_FIELDS = inference.FIELDS
    model_uri = forms.CharField(
        label="Model URI", max_length=inference.MAX_URI_LENGTH,
        help_text="hf://org/model (Hugging Face), s3://bucket/path or pvc://claim/path.",
        widget=forms.TextInput(
            attrs={**TEXT, "placeholder": "hf://meta-llama/Llama-3.1-8B-Instruct"}
        ),
    )
    credential = forms.ChoiceField(
        label="Model credential", required=False, widget=forms.Select(attrs=SELECT),
        help_text="For a gated or private model: the Hugging Face token or S3 key the model "
        "is loaded with. Stored in your tenant's credentials, never shown.",
    )
    gpu = forms.ChoiceField(label="GPU", widget=forms.Select(attrs=SELECT))
    gpus_per_replica = _number("GPUs per replica", minimum=1, maximum=8,
                               initial=inference.DEFAULT_GPUS_PER_REPLICA)
    min_replicas = _number("Min replicas", minimum=0, maximum=inference.MAX_REPLICAS,
                           initial=inference.DEFAULT_MIN_REPLICAS, help_text="0 scales to zero.")
    max_replicas = _number("Max replicas", minimum=1, maximum=inference.MAX_REPLICAS,
                           initial=inference.DEFAULT_MAX_REPLICAS,
                           help_text="Quota is held for the maximum.")
    cpu = _number("vCPUs per replica", minimum=1, maximum=inference.MAX_CPU,
                  initial=inference.DEFAULT_CPU)
    memory_gib = _number("Memory per replica (GiB)", minimum=1, maximum=inference.MAX_MEMORY_GIB,
                         initial=inference.DEFAULT_MEMORY_GIB)
    # Shown once a HAMi share is picked (the form re-renders as the person changes it).
    gpu_memory_gib = _hami_memory(
        "GPU memory per replica (GiB)",
        "Of one GPU, shared through HAMi: the model and its KV cache must fit.",
    )
    gpu_cores = _hami_cores("GPU compute per replica (%)")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["credential"].choices = self.credential_choices()
        self.fields["gpu"].choices = self.gpu_choices()
        self.fit_gpu_fields(count="gpus_per_replica", after=["name", "model_uri", "gpu"])


    def credential_choices(self) -> list[tuple[str, str]]:
        """The tenant's credentials of the kind the model URI's scheme needs (all of them
        before a URI is typed); `credentials_missing` when none fits, for the empty state."""
        uri = self.data.get("model_uri") if self.is_bound else self.initial.get("model_uri")
        scheme, typed, _ = str(uri or "").partition("://")
        needed = inference_credential.KIND_OF_SCHEME.get(scheme)
        fitting = [(name, f"{name} ({inference_credential.KIND_LABELS[kind]})")
                   for name, kind in self.context.credentials.items()
                   if needed is None or kind == needed]
        if typed and needed is None:  # pvc://: the tenant's own volume needs none
            fitting = []
        self.credentials_missing = not fitting and not (typed and needed is None)
        return [("", "No credential (a public model)"), *fitting]


class VirtualMachineForm(WorkloadForm):
    SPEC_FIELDS = ("image", "custom_image", "default_user", "cpu", "memory_gib", "disk_gib",
                   "gpu", "gpus", "ssh_public_key", "running")
    image = forms.ChoiceField(label="Boot image", widget=forms.Select(attrs=SELECT))
    custom_image = forms.CharField(
        label="Custom container-disk image", required=False, max_length=500,
        help_text="Only with “Custom image”: an OCI reference, e.g. quay.io/me/disk:1.0.",
        widget=forms.TextInput(attrs=TEXT),
    )
    default_user = forms.CharField(
        label="User", required=False, max_length=32, widget=forms.TextInput(attrs=TEXT),
        help_text="Only with a custom image: the user cloud-init gives your SSH key to.",
    )
    cpu = _number("vCPUs", minimum=1, maximum=vm_spec.MAX_CPU, initial=4)
    memory_gib = _number("Memory (GiB)", minimum=1, maximum=vm_spec.MAX_MEMORY_GIB, initial=16)
    disk_gib = _number("Root disk (GiB)", minimum=1, maximum=vm_spec.MAX_DISK_GIB, initial=50,
                       help_text="At least the image's size; it can grow later, never shrink.")
    gpu = forms.ChoiceField(label="GPUs", required=False, widget=forms.Select(attrs=SELECT))
    gpus = _number("How many GPUs", minimum=0, maximum=8, initial=1)
    ssh_public_key = forms.CharField(
        label="SSH public key", max_length=16384,
        widget=forms.Textarea(
            attrs={**TEXT, "rows": 3, "placeholder": "ssh-ed25519 AAAA… you@laptop"}
        ),
        help_text="One OpenSSH public key (ed25519, ECDSA, or RSA of 2048 bits or more).",
    )
    running = _flag("Start it now", initial=True)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        images = self.context.catalog.get("vm_images") or {}
        self.fields["image"].choices = [
            *((key, entry["label"]) for key, entry in images.items()),
            (self.CUSTOM, "Custom image…"),
        ]
        self.fields["gpu"].choices = self.gpu_choices(
            kinds=("gpu",), optional=True,
            refused="Only whole GPUs pass through to a VM (no MIG or HAMi shares).",
        )

    def spec(self) -> dict[str, Any]:
        spec = self.catalog_or_custom(super().spec(), custom=("custom_image", "default_user"))
        if not spec.get("gpu"):
            spec.pop("gpu", None)
            spec["gpus"] = 0
        return spec


class SlurmForm(WorkloadForm):
    SPEC_FIELDS = tuple(sorted(slurm_spec.FIELDS))
    workers = _number("GPU workers", minimum=0, maximum=slurm_spec.MAX_WORKERS, initial=2)
    gpu = forms.ChoiceField(label="GPU", widget=forms.Select(attrs=SELECT))
    gpus_per_worker = _number("GPUs per worker", minimum=1, maximum=8, initial=1)
    cpu_per_worker = _number("vCPUs per worker", minimum=1,
                             maximum=slurm_spec.MAX_CPU_PER_WORKER, initial=8)
    memory_gib_per_worker = _number("Memory per worker (GiB)", minimum=1,
                                    maximum=slurm_spec.MAX_MEMORY_GIB_PER_WORKER, initial=64)
    accounting = _flag("Accounting (slurmdbd)", initial=False,
                       help_text="Keeps job records (sacct); runs a small database beside it.")
    rest_api = _flag("REST API (slurmrestd)", initial=False)
    ssh_public_key = forms.CharField(
        label="SSH public key (optional)", required=False, max_length=16384,
        widget=forms.Textarea(attrs={**TEXT, "rows": 3}),
        help_text="Root's key on the login node; without one, use kubectl exec.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["gpu"].choices = self.gpu_choices(
            kinds=("gpu", "mig"),
            refused="HAMi shares are not offered: Slurm's GPU scheduling does not know them."
            if self.context.hami_models() else "",
        )


class NotebookForm(WorkloadForm):
    """JupyterLab or VS Code: an image of the admins' list (or, where the tenant may, one of
    one's own and the interface it runs), its size and an optional GPU, MIG instance or HAMi
    share. The home volume is the launching person's: nothing to type."""

    SPEC_FIELDS = ("image", "custom_image", "interface", "cpu", "memory_gib", "gpu", "gpus",
                   *gpu_input.HAMI_FIELDS)
    image = forms.ChoiceField(label="Image", widget=forms.Select(attrs=SELECT))
    custom_image = forms.CharField(
        label="Your own image", required=False, max_length=500,
        help_text="Only with “Your own image”: an OCI reference with its registry, e.g. "
        "quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10.",
        widget=forms.TextInput(attrs=TEXT),
    )
    interface = forms.ChoiceField(
        label="It runs", required=False, widget=forms.Select(attrs=SELECT),
        choices=NotebookImage.Interface.choices,
        help_text="Only with your own image: how the portal starts it (a Jupyter Docker Stacks "
        "image, or a code-server image).",
    )
    cpu = _number("vCPUs", minimum=1, maximum=notebook.MAX_CPU, initial=notebook.DEFAULT_CPU)
    memory_gib = _number("Memory (GiB)", minimum=1, maximum=notebook.MAX_MEMORY_GIB,
                         initial=notebook.DEFAULT_MEMORY_GIB)
    gpu = forms.ChoiceField(label="GPU", required=False, widget=forms.Select(attrs=SELECT))
    gpus = _number("How many GPUs", minimum=1, maximum=8, initial=1)
    gpu_memory_gib = _hami_memory("GPU memory (GiB)",
                                  "Of one GPU, shared through HAMi: what your work needs.")
    gpu_cores = _hami_cores("GPU compute (%)")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        images = self.context.catalog.get("notebook_images") or {}
        custom = bool(self.context.catalog.get("notebook_custom_images"))
        self.fields["image"].choices = [
            *((key, entry["label"]) for key, entry in images.items()),
            *([(self.CUSTOM, "Your own image…")] if custom else []),
        ]
        if not custom:  # the admins' list only: nothing of one's own to ask for
            del self.fields["custom_image"], self.fields["interface"]
        self.fields["gpu"].choices = self.gpu_choices(optional=True)
        picked = self.fit_gpu_fields(count="gpus", after=["name", "image", "custom_image",
                                                          "interface", "cpu", "memory_gib",
                                                          "gpu"])
        if not picked.startswith("gpu:") and "gpus" in self.fields:
            del self.fields["gpus"]  # none, or one MIG instance: no count to ask

    def spec(self) -> dict[str, Any]:
        spec = self.catalog_or_custom(super().spec(), custom=("custom_image", "interface"))
        if not spec.get("gpu"):
            spec.pop("gpu", None)
        return spec


FORMS: dict[str, type[WorkloadForm]] = {
    "vcluster": VClusterForm,
    "inference": InferenceForm,
    "vm": VirtualMachineForm,
    "slurm": SlurmForm,
    "notebook": NotebookForm,
}


GPU_COUNTS = frozenset({"gpus", "gpus_per_replica", "gpus_per_worker"})
PARTS = ("mig:", "hami:")


class ScaleForm(FieldsFromTemplate, forms.Form):
    """The fields of a running workload its kind lets change, prefilled with its spec.
    `{{ form }}` writes them (`_scale_fields.html`)."""

    fields_template = "tenants/workloads/_scale_fields.html"

    def __init__(self, *args, workload, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.kind = workload.kind
        launch = FORMS[workload.kind]
        for name in workload.kind_entry.scalable:
            if name not in workload.spec:
                continue  # e.g. a whole-GPU endpoint has no HAMi share to resize
            if name in GPU_COUNTS and str(workload.spec.get("gpu") or "").startswith(PARTS):
                continue  # one MIG instance or one HAMi share: no count to change
            field = launch.base_fields[name]
            self.fields[name] = type(field)(
                label=field.label, required=False, help_text=field.help_text,
                widget=field.widget, **({"choices": field.choices}
                                        if isinstance(field, forms.ChoiceField) else {}),
            )
            self.initial[name] = workload.spec.get(name)

    def changes(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        return {name: value for name, value in self.cleaned_data.items()
                if value not in (None, "") and str(value) != str(spec.get(name))}

    def add_service_errors(self, exc: ValidationError) -> None:
        for key, messages in exc.message_dict.items():
            name = key.removeprefix("spec.")
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


class IdlePolicyForm(forms.ModelForm):
    """A tenant's idle GPU policy; an empty number takes the fleet's default (its placeholder)."""

    class Meta:
        model = IdlePolicy
        fields = ["mode", "threshold_percent", "window_minutes", "grace_minutes",
                  "notebook_idle_hours"]
        labels = {"mode": "What to do", "threshold_percent": "Idle below (%)",
                  "window_minutes": "For (minutes)", "grace_minutes": "Grace period (minutes)",
                  "notebook_idle_hours": "Stop notebooks unused for (hours)"}
        widgets = {"mode": forms.RadioSelect(attrs={"class": "form-check-input"})}

    def __init__(self, *args, defaults, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name in ("threshold_percent", "window_minutes", "grace_minutes",
                     "notebook_idle_hours"):
            self.fields[name].widget.attrs["placeholder"] = f"{getattr(defaults, name)} (default)"
