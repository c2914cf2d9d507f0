"""Admissibility tokens: HMAC-SHA256 over a slice's whole canonical content, and the key.

**The token.** The signed message is ``kgr-slice-v2|<slice id>|`` followed by the slice's canonical
content (:func:`kgr.model.slices.slice_content`: every field a reader sees but the id and the
token, quotes and their sources included, as JSON with sorted keys). The token is the full 256-bit
HMAC in hex (64 characters), compared in constant time. Altering any field, the key, or the
token itself makes verification fail.

**The key** comes from ``KGR_SLICE_KEY``, else the file named by ``KGR_SLICE_KEY_FILE``, else
``<kgr config dir>/slice.key`` (``~/.config/kgr`` or ``$XDG_CONFIG_HOME/kgr``), which kgr creates on
first use (64 random hex digits). Rules:

- **strength**: at least :data:`MIN_KEY_BYTES` (16) bytes and an estimated entropy of at least
  :data:`MIN_KEY_BITS` (64) bits, where the estimate is the key's length times the Shannon entropy
  of its byte frequencies, :math:`n \\cdot H = -\\sum_b c_b \\log_2 (c_b / n)` (:func:`key_entropy_bits`).
  It refuses repetition (16 × ``a``: 0 bits; ``abab…``: 16; ``0123`` × 4: 32) but cannot see a
  dictionary word, and it is at most :math:`n \\log_2 n` bits for n bytes: a 16-byte key passes only
  with 16 different characters. Use a random key of 24 characters or more (``openssl rand -hex 16``
  gives 32 hex digits, about 118 bits by the estimate), or let kgr create the key file;
- **a key file** must be a regular file of at most 4,096 bytes that neither group nor others may
  read or write (mode 0600 or stricter, checked on the opened file): a key others can read signs
  slices for them. The error names the fix, ``chmod 600 <file>``;
- **the default key file** is created atomically: the key is written to a temporary file (mode 0600)
  in the same directory, then hard-linked into place (``os.link`` fails if the name exists). Of
  several processes creating it at once, one wins and the others read the winner's complete key.

The key is never logged, never returned and never part of an error message.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import secrets
import stat
import tempfile
from collections import Counter
from pathlib import Path

from kgr.errors import KgrValidationError
from kgr.model.slices import ContextSlice, slice_content, slice_digest

__all__ = ["TOKEN_VERSION", "MIN_KEY_BYTES", "MIN_KEY_BITS", "token_message", "sign", "verify", "seal",
           "alteration", "slice_key", "key_path", "key_entropy_bits", "check_key"]

TOKEN_VERSION = "kgr-slice-v2"
#: Shortest key accepted (bytes).
MIN_KEY_BYTES = 16
#: Least estimated key entropy accepted (bits; :func:`key_entropy_bits`).
MIN_KEY_BITS = 64.0
#: Largest key file read (bytes).
MAX_KEY_FILE = 4096


def token_message(slice_id: str, content: bytes) -> bytes:
    """What the token signs: ``kgr-slice-v2|<slice id>|<canonical content>``."""
    return f"{TOKEN_VERSION}|{slice_id}|".encode() + content


def seal(s: ContextSlice, key: bytes | None = None) -> ContextSlice:
    """``s`` with its id (the hash of its canonical content) and its token (the HMAC of both)."""
    content = slice_content(s)
    sid = slice_digest(content)
    return s.model_copy(update={"slice_id": sid, "admissibility_token": sign(token_message(sid, content), key)})


def alteration(s: ContextSlice, key: bytes | None = None) -> str | None:
    """Why ``s`` is not a slice sealed with ``key`` exactly as it is, or None when it is."""
    content = slice_content(s)
    if slice_digest(content) != s.slice_id:
        return "the slice's content does not match its id (altered)"
    if not verify(s.admissibility_token, token_message(s.slice_id, content), key):
        return "the admissibility token does not match (forged, altered, or another key)"
    return None


def key_entropy_bits(key: bytes) -> float:
    """Estimated entropy of ``key`` in bits: its length times the Shannon entropy of its byte
    frequencies (see the module docstring).

    >>> key_entropy_bits(b"a" * 16), key_entropy_bits(b"ab" * 8), key_entropy_bits(b"0123456789abcdef")
    (0.0, 16.0, 64.0)
    """
    n = len(key)
    if n == 0:
        return 0.0
    return max(0.0, -sum(c * math.log2(c / n) for c in Counter(key).values()))


def check_key(key: bytes, where: str) -> bytes:
    """``key`` if it is strong enough (module docstring), else :class:`KgrValidationError` naming
    ``where`` (the variable or file) and the rule, never the key."""
    bits = key_entropy_bits(key)
    if len(key) < MIN_KEY_BYTES or bits < MIN_KEY_BITS:
        raise KgrValidationError(
            f"{where}: the slice key is too weak ({len(key)} bytes, about {bits:.0f} bits by its character "
            f"frequencies; at least {MIN_KEY_BYTES} bytes and {MIN_KEY_BITS:.0f} bits are needed); use a random "
            "key of 24 characters or more, e.g. `openssl rand -hex 16`", field="slice_key")
    return key


def key_path() -> Path:
    if os.environ.get("KGR_SLICE_KEY_FILE"):
        return Path(os.environ["KGR_SLICE_KEY_FILE"]).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kgr" / "slice.key"


def _create_default_key(path: Path) -> None:
    """Write a new random key to ``path`` atomically unless it exists (module docstring)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".slice.key.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process won the race; its key is complete (linked only once written)
        finally:
            os.unlink(tmp)
    except OSError as exc:  # a read-only directory, a file system without hard links
        raise KgrValidationError(f"cannot create the slice key file {path} ({exc.strerror}); set KGR_SLICE_KEY "
                                 "or KGR_SLICE_KEY_FILE", field="KGR_SLICE_KEY_FILE") from None


def _read_key_file(path: Path) -> bytes:
    """The key in ``path``, after checking the opened file: regular, small, owner-only."""
    def refuse(why: str) -> KgrValidationError:
        return KgrValidationError(f"the slice key file {path} {why}", field="KGR_SLICE_KEY_FILE")

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the open
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)  # the file opened, not the name: no swap between the check and the read
        if not stat.S_ISREG(st.st_mode):
            raise refuse("is not a regular file")
        if os.name == "posix" and st.st_mode & 0o077:
            raise refuse(f"may be read or written by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
                         f"make it private: chmod 600 {path}")
        if st.st_size > MAX_KEY_FILE:
            raise refuse(f"holds more than {MAX_KEY_FILE} bytes (not a key file)")
        return os.read(fd, MAX_KEY_FILE + 1).strip()
    finally:
        os.close(fd)


def slice_key() -> bytes:
    """The signing key (rules in the module docstring).

    Raises
    ------
    KgrValidationError
        ``KGR_SLICE_KEY`` or the key file holds a weak key; the key file is unreadable, not a
        regular file, too large, or readable or writable by group or others.
    """
    env = os.environ.get("KGR_SLICE_KEY")
    if env is not None:
        return check_key(env.encode("utf-8", "surrogatepass"), "KGR_SLICE_KEY")
    path = key_path()
    if not os.environ.get("KGR_SLICE_KEY_FILE") and not path.exists():
        _create_default_key(path)
    return check_key(_read_key_file(path), str(path))


def sign(message: bytes, key: bytes | None = None) -> str:
    """HMAC-SHA256 of ``message`` (hex)."""
    return hmac.new(key if key is not None else slice_key(), message, hashlib.sha256).hexdigest()


def verify(token: str, message: bytes, key: bytes | None = None) -> bool:
    """Whether ``token`` is the HMAC of ``message`` (constant-time comparison)."""
    return hmac.compare_digest(sign(message, key).encode(), token.encode("utf-8", "replace"))
