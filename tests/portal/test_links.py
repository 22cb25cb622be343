"""core.links: a row's URL written from a prefix reversed once is reverse()'s own."""

import pytest
from django.urls import reverse

from core.links import url_prefix


@pytest.mark.parametrize("viewname", ["inventory:node-detail", "inventory:rack-detail"])
@pytest.mark.parametrize("value", [1, 7, 80, 123456789])
def test_a_prefix_and_the_id_are_reverse(viewname, value):
    assert f"{url_prefix(viewname)}{value}/" == reverse(viewname, args=[value])


def test_a_route_not_ending_with_its_argument_is_refused():
    with pytest.raises(ValueError):
        url_prefix("billing:invoices-export")
