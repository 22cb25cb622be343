"""portal.links: a row's URL filled into a pattern reversed once is reverse()'s own."""

import pytest
from django.urls import reverse

from portal.links import url_for_each


@pytest.mark.parametrize("viewname", ["inventory:node-detail", "inventory:rack-detail"])
@pytest.mark.parametrize("value", [1, 7, 80, 123456789])
def test_url_for_each_is_reverse(viewname, value):
    assert url_for_each(viewname)(value) == reverse(viewname, args=[value])
