"""A workload's status badge written in Python, for the lists that write their rows themselves
(the workload list, the dashboard's card): the same HTML as `_status_badge.html`."""

from html import escape

from .models import WorkloadStatus

# The badge's pulsing dot: work is under way (as in _status_badge.html).
_SPINNING = frozenset(
    {WorkloadStatus.PROVISIONING, WorkloadStatus.DELETING, WorkloadStatus.PENDING}
)

_SPINNER = (
    '<span class="spinner-grow spinner-grow-sm me-1" aria-hidden="true"'
    ' style="width:.5rem;height:.5rem"></span>'
)


def status_badge(status: str, label: str, *, stopped: bool = False) -> str:
    """`status`'s badge, `label` its display (the workload's `get_status_display()`); a
    stopped VM's (`Workload.stopped`) says Stopped."""
    if stopped:
        return '<span class="badge text-bg-secondary" data-status="stopped">Stopped</span>'
    border = " border" if status == WorkloadStatus.DELETED else ""
    return (
        f'<span class="badge text-bg-{WorkloadStatus.color(status)}{border}"'
        f' data-status="{escape(status)}">{_SPINNER if status in _SPINNING else ""}'
        f"{escape(label)}</span>"
    )
