"""The schema class of every API view (settings: DEFAULT_SCHEMA_CLASS). Kept apart from
core.api.schema, which imports drf-spectacular's views (they import the schema class)."""

from drf_spectacular.openapi import AutoSchema

from .scopes import required_scope
from .tags import tag_for_path


class PortalAutoSchema(AutoSchema):
    """drf-spectacular's schema, each operation tagged by its domain (core.api.tags) and marked
    with the token scope it needs (`x-required-scope`, core.api.scopes)."""

    def get_tags(self) -> list[str]:
        tag = tag_for_path(self.path)
        return [tag] if tag else super().get_tags()

    def get_extensions(self) -> dict:
        return {**super().get_extensions(),
                "x-required-scope": str(required_scope(self.view, self.method))}
