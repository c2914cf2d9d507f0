"""``kgr browser serve``: the guide, the style and the queries served to Neo4j Browser over HTTP
with CORS, on 127.0.0.1."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kgr.browser.guide import GRASS_FILE, GUIDE_FILE, bundle
from kgr.errors import KgrValidationError

__all__ = ["GuideServer", "DEFAULT_GUIDE_PORT"]

#: Default port of ``kgr browser serve`` (next to Neo4j's 7473/7474).
DEFAULT_GUIDE_PORT = 7478


class GuideServer:
    """Serves the guide, the style and the queries to Neo4j Browser on ``http://localhost:<port>``.

    Browser fetches guides and styles from the web page with ``XMLHttpRequest``, so the files are
    served with CORS headers (any origin may read them; they hold nothing secret) and the server
    listens on 127.0.0.1 only. ``localhost`` is on Browser's default remote-content allowlist.

    Paths: ``/kgr-guide.html``, ``/kgr.grass``, ``/kgr-saved-queries.zip``, ``/queries/<file>``, ``/``.

    Examples
    --------
    >>> with GuideServer(port=0) as srv:  # doctest: +SKIP
    ...     print(srv.guide_url)
    http://localhost:41234/kgr-guide.html
    """

    def __init__(self, *, port: int = DEFAULT_GUIDE_PORT, entity_types: Sequence[str] = ()):
        if not 0 <= port <= 65535:
            raise KgrValidationError(f"must be a TCP port (0 = any free one), got {port}", field="port")
        self._files = bundle(entity_types)
        self._files["index.html"] = self._index().encode()
        try:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        except OSError as exc:
            raise KgrValidationError(f"cannot serve the guide on 127.0.0.1:{port} ({exc.strerror or exc}); "
                                     f"choose another port with --port", field="port") from None
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def guide_url(self) -> str:
        return f"{self.url}/{GUIDE_FILE}"

    @property
    def grass_url(self) -> str:
        return f"{self.url}/{GRASS_FILE}"

    def _index(self) -> str:
        links = "".join(f'<li><a href="{name}">{name}</a></li>' for name in sorted(self._files))
        return f"<!DOCTYPE html><html><head><title>kgr for Neo4j Browser</title></head><body><ul>{links}</ul></body></html>"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        files = self._files
        types = {".html": "text/html; charset=utf-8", ".grass": "text/plain; charset=utf-8",
                 ".cypher": "text/plain; charset=utf-8", ".zip": "application/zip"}

        class Handler(BaseHTTPRequestHandler):
            def _cors(self) -> None:
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
                # Browser adds pragma, cache-control and tracing headers (sentry-trace, baggage):
                # allow whatever the preflight asks for; the files are public and read-only.
                asked = self.headers.get("Access-Control-Request-Headers", "")
                allowed = ", ".join(h.strip() for h in asked.split(",") if re.fullmatch(r"[A-Za-z0-9-]+", h.strip()))
                self.send_header("Access-Control-Allow-Headers", allowed or "pragma, cache-control")
                self.send_header("Access-Control-Allow-Private-Network", "true")

            def do_OPTIONS(self) -> None:  # noqa: N802 - CORS preflight (Browser sends no-cache headers)
                self.send_response(204)
                self._cors()
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _send(self, head_only: bool) -> None:
                path = urlsplit(self.path).path.lstrip("/") or "index.html"
                data = files.get(path)
                if data is None:
                    self.send_error(404, "not one of kgr's Browser files")
                    return
                self.send_response(200)
                self._cors()
                self.send_header("Content-Type", types.get(Path(path).suffix, "application/octet-stream"))
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                if not head_only:
                    self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send(False)

            def do_HEAD(self) -> None:  # noqa: N802
                self._send(True)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

        return Handler

    def start(self) -> "GuideServer":
        """Serve in a background thread (returns at once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="kgr-guide-server", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> "GuideServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
