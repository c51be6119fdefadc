"""Static files under content-hashed names, cached by browsers for a year.

Templates call `static_url("css/app.css")`, which answers `/static/css/app.<hash>.css`: the
hash is the first 12 hex digits of the file's SHA-256, taken once per process. A hashed URL
never changes meaning, so it is served with `Cache-Control: public, max-age=31536000,
immutable` and a returning browser does not ask again; a new file means a new name. The
plain name (`/static/css/app.css`) still answers, with `no-cache` so it is revalidated.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# name.<12 hex>.ext -> name.ext (the hash sits right before the last suffix)
_HASHED = re.compile(r"^(?P<stem>.+)\.(?P<digest>[0-9a-f]{12})(?P<suffix>\.[A-Za-z0-9]+)$")


class AssetManifest:
    """Relative path under the static folder -> its content hash, computed on first use."""

    def __init__(self, root: Path, prefix: str = "/static") -> None:
        self.root = root
        self.prefix = prefix
        self._digests: dict[str, str] = {}

    def digest(self, path: str) -> str | None:
        known = self._digests.get(path)
        if known is not None:
            return known
        file = (self.root / path).resolve()
        if not file.is_relative_to(self.root.resolve()) or not file.is_file():
            return None
        digest = hashlib.sha256(file.read_bytes()).hexdigest()[:12]
        self._digests[path] = digest
        return digest

    def url(self, path: str) -> str:
        """The hashed URL of a static file (the plain one when the file is missing: a 404 says so)."""
        digest = self.digest(path)
        if digest is None:
            return f"{self.prefix}/{path}"
        stem, dot, suffix = path.rpartition(".")
        return f"{self.prefix}/{stem}.{digest}.{suffix}" if dot else f"{self.prefix}/{path}.{digest}"


class HashedStaticFiles(StaticFiles):
    """StaticFiles that answers hashed names with the current file and long-lived cache headers."""

    def __init__(self, *, manifest: AssetManifest) -> None:
        super().__init__(directory=manifest.root)
        self.manifest = manifest

    async def get_response(self, path: str, scope: Scope) -> Response:
        match = _HASHED.match(path.replace(os.sep, "/"))
        if match is not None:
            plain = f"{match['stem']}{match['suffix']}"
            current = self.manifest.digest(plain)
            response = await super().get_response(plain, scope)
            # An old hash (a page cached before a deploy) still gets today's file, but not for a year.
            fresh = current == match["digest"] and response.status_code in (200, 304)
            response.headers["Cache-Control"] = IMMUTABLE if fresh else REVALIDATE
            return response
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            response.headers["Cache-Control"] = REVALIDATE
        return response
