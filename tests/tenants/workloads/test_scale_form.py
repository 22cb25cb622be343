"""A running workload's resize form: written through its template with the workload's own
values, its errors shown, never another workload's."""

from django.core.exceptions import ValidationError
from django.template import engines

from tenants.workloads.forms import ScaleForm
from tenants.workloads.models import Workload

from .conftest import INFERENCE_SPEC


def _written_through_the_template(form) -> str:
    template = engines["django"].get_template("tenants/workloads/_scale_fields.html")
    return template.render({"form": form})


def _vm(cpu: int, memory_gib: int = 8) -> Workload:
    return Workload(kind="vm", name="box", spec={"image": "ubuntu-24.04", "cpu": cpu,
                                                 "memory_gib": memory_gib, "disk_gib": 20})


def test_each_workload_gets_its_own_values_and_the_same_values_the_same_html():
    two, four = ScaleForm(workload=_vm(2)), ScaleForm(workload=_vm(4))
    assert 'name="cpu" value="2"' in str(two).replace('type="number" ', "")
    assert 'name="cpu" value="4"' in str(four).replace('type="number" ', "")
    for workload in (_vm(2), _vm(4), _vm(2, memory_gib=16)):
        form = ScaleForm(workload=workload)
        assert str(form) == _written_through_the_template(ScaleForm(workload=workload))
        assert str(form) == str(ScaleForm(workload=workload))


def test_kinds_with_the_same_values_are_written_apart():
    vm = str(ScaleForm(workload=_vm(2)))
    vcluster = str(ScaleForm(workload=Workload(kind="vcluster", name="dev",
                                               spec={"cpu": 2, "memory_gib": 8})))
    assert vm != vcluster and "Kubernetes" not in vm


def test_errors_are_shown_and_not_kept():
    workload = Workload(kind="inference", name="chat", spec=dict(INFERENCE_SPEC))
    clean = str(ScaleForm(workload=workload))
    refused = ScaleForm({"max_replicas": "9"}, workload=workload)
    assert refused.is_valid()
    refused.add_service_errors(ValidationError({"spec.max_replicas": ["Only 2 are left."]}))
    html = str(refused)
    assert "Only 2 are left." in html and 'value="9"' in html
    assert str(ScaleForm(workload=workload)) == clean
    assert "invalid-feedback" not in clean
