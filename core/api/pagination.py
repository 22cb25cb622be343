from dataclasses import dataclass

from django.core.paginator import Paginator
from django.utils.functional import cached_property
from rest_framework.pagination import PageNumberPagination

from core.stamps import read_stamps, stamped


@dataclass(frozen=True)
class CountStamp:
    """What a list's count depends on besides its tables: `extra` must name everything that
    narrows the rows (the caller's visible tenants, the filters), `tables` every table the
    count reads (each one watched by a stamp trigger, see `core.stamps`)."""

    name: str
    tables: tuple[str, ...]
    extra: object


class StampedCountPaginator(Paginator):
    """Django's paginator whose count, given a `CountStamp`, is cached under the versions of the
    tables it counts: the same filters over unchanged tables count the same, so a page of a
    large list reads its rows without counting them all again."""

    count_stamp: CountStamp | None = None

    @cached_property
    def count(self) -> int:
        count_rows = Paginator.count.func
        stamp = self.count_stamp
        if stamp is None:
            return count_rows(self)
        return stamped(f"api-count:{stamp.name}", stamp.tables, lambda: count_rows(self),
                       stamps=read_stamps(), extra=stamp.extra)


class PortalPagination(PageNumberPagination):
    """Page-number pagination; clients may ask for up to 500 rows a page. A view may set
    `count_stamp` before paginating for its count to be cached (`StampedCountPaginator`)."""

    page_size_query_param = "page_size"
    max_page_size = 500
    count_stamp: CountStamp | None = None

    def django_paginator_class(self, object_list, per_page) -> StampedCountPaginator:
        paginator = StampedCountPaginator(object_list, per_page)
        paginator.count_stamp = self.count_stamp
        return paginator
