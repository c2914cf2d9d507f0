"""Settings of the managed local Neo4j: where it lives, its ports and sizes, and its status.

:class:`RuntimeConfig` reads the environment variables listed in :mod:`kgr.runtime`, checks them
(loopback only, distinct ports, sizes like ``512m``, durations like ``15m``) and derives the
paths, URIs and the ``-c key=value`` server settings; :class:`Neo4jStatus` is what
``kgr neo4j status`` reports.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from kgr.errors import KgrValidationError

__all__ = ["BROWSER_VERSION", "MIN_JAVA_MAJOR", "NEO4J_VERSION", "Neo4jStatus", "RuntimeConfig", "default_cache_dir"]

NEO4J_VERSION = "5.26.30"
BROWSER_VERSION = "5.24.0"
MIN_JAVA_MAJOR = 17

_SIZE = r"^[1-9][0-9]*[kKmMgG]$"
_DURATION = r"^[0-9]+(ms|s|m|h)$"


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def _env_port(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise KgrValidationError(f"must be a TCP port number, got {raw!r}", field=name) from None


def default_cache_dir() -> Path:
    """kgr's cache directory: ``$KGR_CACHE_DIR``, else ``$XDG_CACHE_HOME/kgr``, else ``~/.cache/kgr``."""
    if os.environ.get("KGR_CACHE_DIR", "").strip():
        return Path(os.environ["KGR_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache"
    return Path(base).expanduser() / "kgr"


def _default_home() -> Path:
    if os.environ.get("KGR_NEO4J_HOME", "").strip():
        return Path(os.environ["KGR_NEO4J_HOME"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(base).expanduser() / "kgr" / "neo4j"


Port = Annotated[int, Field(ge=1, le=65535)]


class RuntimeConfig(BaseModel):
    """Settings of the managed local Neo4j.

    ``RuntimeConfig()`` reads the ``KGR_*`` environment variables listed in the module docstring;
    keyword arguments override them (``RuntimeConfig(bolt_port=17687, home=tmp)``).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    neo4j_version: Annotated[str, Field(pattern=r"^5\.[0-9]+\.[0-9]+$")] = NEO4J_VERSION
    browser_version: Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")] = BROWSER_VERSION
    cache_dir: Path = Field(default_factory=default_cache_dir)
    home: Path = Field(default_factory=_default_home)
    host: str = "127.0.0.1"
    bolt_port: Port = Field(default_factory=lambda: _env_port("KGR_NEO4J_BOLT_PORT", 7687))
    http_port: Port = Field(default_factory=lambda: _env_port("KGR_NEO4J_HTTP_PORT", 7474))
    heap: str = Field(default_factory=lambda: _env("KGR_NEO4J_HEAP", "512m"))
    pagecache: str = Field(default_factory=lambda: _env("KGR_NEO4J_PAGECACHE", "256m"))
    #: Longest a transaction may run before Neo4j terminates it (Neo4j's default, 0, means forever).
    transaction_timeout: str = "15m"
    #: Longest a transaction waits for a lock (deadlocks are detected separately and fail fast).
    lock_timeout: str = "5m"
    java: str | None = Field(default_factory=lambda: os.environ.get("KGR_JAVA") or None)
    mvn: str | None = Field(default_factory=lambda: os.environ.get("KGR_MVN") or None)

    @field_validator("cache_dir", "home")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().absolute()

    @field_validator("heap", "pagecache")
    @classmethod
    def _size(cls, value: str) -> str:
        if not re.fullmatch(_SIZE, value):
            raise ValueError(f"must be a size like 512m or 1g, got {value!r}")
        return value.lower()

    @field_validator("transaction_timeout", "lock_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        if not re.fullmatch(_DURATION, value):
            raise ValueError(f"must be a duration like 30s or 15m, got {value!r}")
        return value

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        try:
            loopback = value == "localhost" or ipaddress.ip_address(value).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                f"the managed Neo4j runs without authentication, so it only listens on loopback "
                f"(127.0.0.1, ::1, localhost), not {value!r}; for a shared server use "
                f"docker/compose.yaml or set NEO4J_URI"
            )
        return value

    @model_validator(mode="after")
    def _distinct_ports(self) -> RuntimeConfig:
        if self.bolt_port == self.http_port:
            raise ValueError(f"bolt_port and http_port must differ (both {self.bolt_port})")
        return self

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            error = KgrValidationError.from_pydantic(exc, prefix="neo4j")
            first = error.details[0]["msg"] if error.details else str(exc)
            raise KgrValidationError(
                first.removeprefix("Value error, "), field=error.field, details=error.details
            ) from None

    # ---- derived locations
    @property
    def install_dir(self) -> Path:
        """``<cache>/neo4j-<version>``: the pom, the Maven log and ``lib/``."""
        return self.cache_dir / f"neo4j-{self.neo4j_version}"

    @property
    def lib_dir(self) -> Path:
        """The jars on the server's classpath."""
        return self.install_dir / "lib"

    @property
    def _url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def bolt_uri(self) -> str:
        return f"bolt://{self._url_host}:{self.bolt_port}"

    @property
    def http_url(self) -> str:
        return f"http://{self._url_host}:{self.http_port}"

    @property
    def browser_url(self) -> str:
        return f"{self.http_url}/browser/"

    def settings(self) -> dict[str, str]:
        """The ``-c key=value`` settings passed to the server (they override ``conf/neo4j.conf``)."""
        home = self.home
        return {
            "server.default_listen_address": self.host,
            "server.default_advertised_address": self.host,
            "server.bolt.listen_address": f"{self.host}:{self.bolt_port}",
            "server.bolt.advertised_address": f"{self._url_host}:{self.bolt_port}",
            "server.http.listen_address": f"{self.host}:{self.http_port}",
            "server.http.advertised_address": f"{self._url_host}:{self.http_port}",
            "server.https.enabled": "false",
            # Loopback only, single user: see the module docstring for why auth is off.
            "dbms.security.auth_enabled": "false",
            "dbms.usage_report.enabled": "false",
            "server.memory.pagecache.size": self.pagecache,
            "server.memory.heap.initial_size": self.heap,
            "server.memory.heap.max_size": self.heap,
            "db.transaction.timeout": self.transaction_timeout,
            "db.lock.acquisition.timeout": self.lock_timeout,
            # Netty waits a 5 s quiet period twice while closing Bolt, after the databases have
            # already been checkpointed and closed; without it a clean stop takes ~11 s instead of well under one.
            "internal.dbms.bolt.netty_server_shutdown_quiet_period": "0",
            "server.directories.data": str(home / "data"),
            "server.directories.logs": str(home / "logs"),
            "server.directories.run": str(home / "run"),
            "server.directories.plugins": str(home / "plugins"),
            "server.directories.import": str(home / "import"),
            "server.directories.lib": str(self.lib_dir),
        }


class Neo4jStatus(BaseModel):
    """What ``kgr neo4j status`` reports. ``ready`` means Bolt answered a handshake just now."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    running: bool
    ready: bool
    pid: int | None
    bolt_uri: str
    http_url: str
    browser_url: str
    home: str
    version: str
    log_path: str
    installed: bool
