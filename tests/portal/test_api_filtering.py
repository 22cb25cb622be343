"""FormOnceFilterSet (portal.api.filtering): one form class per filter set, a form per request."""

import pytest

from inventory.filters import NodeFilterSet
from inventory.models import Node
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
