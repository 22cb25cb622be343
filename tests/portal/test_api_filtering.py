"""FormOnceFilterSet (core.api.filtering): one form class per filter set, a form per request;
an empty value of any filter means "any"."""

import django_filters
import pytest
from django.http import QueryDict

from core.api.filtering import FormOnceFilterSet
from inventory.filters import NodeFilterSet
from inventory.models import Node, NodeState
from tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


def test_the_form_class_is_made_once_and_each_request_validates_its_own_data():
    kept = NodeFactory(hostname="gpu-keep")
    NodeFactory(hostname="other")
    first = NodeFilterSet({"q": "keep"}, queryset=Node.objects.all())
    second = NodeFilterSet({"state": ["no-such-state"]}, queryset=Node.objects.all())

    assert type(first.form) is type(second.form)
    assert first.form is not second.form
    assert list(first.qs) == [kept]
    assert not second.is_valid()
    assert "state" in second.form.errors
    assert first.is_valid()


# --- an empty value means "any", on every filter set ---------------------------------------

def _portal_filter_sets() -> list[type]:
    """Every filter set the portal defines (the modules that hold them are imported first)."""
    import billing.api.rates
    import billing.filters  # noqa: F401
    import inventory.filters  # noqa: F401
    import tenants.quota.api
    import tenants.workloads.api  # noqa: F401

    found, todo = [], [django_filters.FilterSet]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if sub.__module__.split(".")[0] in {"billing", "inventory", "tenants", "portal"} \
                    and sub is not FormOnceFilterSet:
                found.append(sub)
    return found


def test_every_filter_set_of_the_portal_reads_an_empty_value_as_any():
    filter_sets = _portal_filter_sets()
    assert {fs.__name__ for fs in filter_sets} >= {
        "NodeFilterSet", "InvoiceFilterSet", "RateFilterSet", "WorkloadFilter",
        "QuotaRequestFilter",
    }
    for filter_set in filter_sets:
        assert issubclass(filter_set, FormOnceFilterSet), filter_set
        queryset = filter_set._meta.model.objects.all()
        for name in filter_set.base_filters:
            # As a browser sends a select's "any" choice, alone and beside a real choice.
            for data in (QueryDict(f"{name}="), QueryDict(f"{name}=&{name}=%20")):
                filters = filter_set(data, queryset=queryset)
                assert filters.is_valid(), (filter_set.__name__, name, filters.errors)
                assert str(filters.qs.query) == str(filter_set({}, queryset=queryset).qs.query)


def test_an_empty_choice_beside_a_real_one_keeps_the_real_one():
    NodeFactory(hostname="available-one", state=NodeState.AVAILABLE)
    NodeFactory(hostname="retired-one", state=NodeState.RETIRED)

    filters = NodeFilterSet(QueryDict("state=&state=retired&site="), queryset=Node.objects.all())

    assert filters.is_valid(), filters.errors
    assert [node.hostname for node in filters.qs] == ["retired-one"]
