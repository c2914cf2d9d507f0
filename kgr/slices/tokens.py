"""Admissibility tokens: HMAC-SHA256 over a slice's provenance chain, verified in constant time.

The signed string is ``slice_id|policy_id|policy_params_hash|graph_hash|schema_version|kgr-slice-v1``
(after Live KG's canonical string, 002_882827c94a695f02.txt §3.3); the token is the full 256-bit
HMAC in hex (64 characters). Changing any field of the chain, or the key, changes the token.

The key comes from ``KGR_SLICE_KEY`` (any string of at least 16 characters), else the file named
by ``KGR_SLICE_KEY_FILE``, else ``<kgr config dir>/slice.key`` (``~/.config/kgr`` or
``$XDG_CONFIG_HOME/kgr``), created on first use with 32 random bytes and mode 0600. The key is
never logged, never returned and never part of an error message.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from kgr.errors import KgrValidationError

__all__ = ["TOKEN_VERSION", "canonical_string", "sign", "verify", "slice_key", "key_path"]

TOKEN_VERSION = "kgr-slice-v1"
_MIN_KEY = 16


def canonical_string(slice_id: str, policy_id: str, params_hash: str, graph_hash: str, schema_version: str) -> str:
    """The string the token signs (``|``-joined; no field may contain ``|``)."""
    fields = (slice_id, policy_id, params_hash, graph_hash, schema_version, TOKEN_VERSION)
    if any("|" in f for f in fields):
        raise KgrValidationError("a provenance field contains '|'", field="slice")
    return "|".join(fields)


def key_path() -> Path:
    if os.environ.get("KGR_SLICE_KEY_FILE"):
        return Path(os.environ["KGR_SLICE_KEY_FILE"]).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kgr" / "slice.key"


def slice_key() -> bytes:
    """The signing key (see the module docstring).

    Raises
    ------
    KgrValidationError
        ``KGR_SLICE_KEY`` or the key file is shorter than 16 characters, or the file is unreadable.
    """
    env = os.environ.get("KGR_SLICE_KEY")
    if env is not None:
        if len(env) < _MIN_KEY:
            raise KgrValidationError(f"KGR_SLICE_KEY must be at least {_MIN_KEY} characters", field="KGR_SLICE_KEY")
        return env.encode()
    path = key_path()
    if not path.exists() and not os.environ.get("KGR_SLICE_KEY_FILE"):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    try:
        key = path.read_bytes().strip()
    except OSError as exc:
        raise KgrValidationError(f"cannot read the slice key file {path} ({exc.strerror})",
                                 field="KGR_SLICE_KEY_FILE") from None
    if len(key) < _MIN_KEY:
        raise KgrValidationError(f"the slice key file {path} holds fewer than {_MIN_KEY} characters",
                                 field="KGR_SLICE_KEY_FILE")
    return key


def sign(message: str, key: bytes | None = None) -> str:
    """HMAC-SHA256 of ``message`` (hex)."""
    return hmac.new(key if key is not None else slice_key(), message.encode(), hashlib.sha256).hexdigest()


def verify(token: str, message: str, key: bytes | None = None) -> bool:
    """Whether ``token`` is the HMAC of ``message`` (constant-time comparison)."""
    return hmac.compare_digest(sign(message, key).encode(), token.encode("utf-8", "replace"))
