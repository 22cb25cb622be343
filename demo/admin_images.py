"""The images the demo's platform admins offer: VM boot images and notebook images, added as an
admin would, through the audited catalog services."""

from tenants.workloads import services as workloads
from tenants.workloads.models import NotebookImage, VmImage

# Boot images platform admins offer for VMs: (key, label, container disk, min disk GiB, user).
VM_IMAGES = (
    ("ubuntu-2404-nvidia", "Ubuntu 24.04 LTS with NVIDIA driver 580",
     "registry.ai-factory.example/containerdisks/ubuntu-nvidia:24.04-580.95.05", 40, "ubuntu"),
    ("rocky-9", "Rocky Linux 9", "registry.ai-factory.example/containerdisks/rocky:9.6", 20,
     "rocky"),
)
# Images platform admins offer for notebooks: (key, label, image, interface). The Jupyter
# Docker Stacks' and code-server's own images, as published.
NOTEBOOK_IMAGES = (
    ("pytorch-cuda", "JupyterLab, PyTorch with CUDA 12",
     "quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10", NotebookImage.Interface.JUPYTERLAB),
    ("scipy", "JupyterLab, SciPy stack", "quay.io/jupyter/scipy-notebook:2025-11-10",
     NotebookImage.Interface.JUPYTERLAB),
    ("minimal", "JupyterLab, minimal", "quay.io/jupyter/minimal-notebook:2025-11-10",
     NotebookImage.Interface.JUPYTERLAB),
    ("vscode", "VS Code (code-server)", "docker.io/codercom/code-server:4.105.1",
     NotebookImage.Interface.CODE_SERVER),
)


def load_admin_images() -> None:
    for key, label, disk, min_disk, user in VM_IMAGES:
        if not VmImage.objects.filter(key=key).exists():
            workloads.vm_image_save(actor=None, image=VmImage(
                key=key, label=label, container_disk=disk, min_disk_gib=min_disk,
                default_user=user,
            ))
    for key, label, image, interface in NOTEBOOK_IMAGES:
        if not NotebookImage.objects.filter(key=key).exists():
            workloads.notebook_image_save(actor=None, image=NotebookImage(
                key=key, label=label, image=image, interface=interface))
