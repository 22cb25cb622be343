"""Production's static files storage: WhiteNoise's compressed manifest, with each URL worked out
once per process. The manifest is read at start and never changes while the process runs, yet
Django's storage hashes and looks up the name again on every `{% static %}`: a page that links
a dozen files did it a dozen times per request."""

from functools import lru_cache

from whitenoise.storage import CompressedManifestStaticFilesStorage


class ManifestStaticStorage(CompressedManifestStaticFilesStorage):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Per instance (the storage is one per process): bounded, for names that templates
        # and code ask for, never client input.
        self.url = lru_cache(maxsize=1024)(self._url_uncached)

    def _url_uncached(self, name, force=False):
        return super().url(name, force)
