"""The one router every app's API uses."""

from rest_framework.routers import SimpleRouter


class PortalRouter(SimpleRouter):
    """A SimpleRouter whose detail URLs match only numeric primary keys.

    `/api/v1/nodes/abc/cordon/` then matches no URL and is the API's JSON 404, for every viewset
    and action at once; a viewset looked up by something else (a slug) sets its own
    `lookup_value_regex`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._default_value_pattern = "[0-9]+"
