"""Argument checks shared by the gauge and evidence modules (one message style everywhere)."""

from __future__ import annotations

import math
import numbers
from typing import Any

from kgr.errors import KgrValidationError

__all__ = ["real", "integer"]


def real(name: str, x: Any, *, ge: float | None = None, gt: float | None = None, le: float | None = None) -> float:
    """``x`` as a float, or a :class:`KgrValidationError` naming ``name`` and the allowed range."""
    conds = []
    if ge is not None:
        conds.append(f">= {ge:g}")
    if gt is not None:
        conds.append(f"> {gt:g}")
    if le is not None:
        conds.append(f"<= {le:g}")
    want = "a finite number" + (" " + " and ".join(conds) if conds else "")
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise KgrValidationError(f"{name} must be {want}, got {x!r}")
    v = float(x)
    if (
        not math.isfinite(v)
        or (ge is not None and v < ge)
        or (gt is not None and v <= gt)
        or (le is not None and v > le)
    ):
        raise KgrValidationError(f"{name} must be {want}, got {x!r}")
    return v


def integer(name: str, x: Any, *, ge: int) -> int:
    """``x`` as an int ``>= ge`` (bools refused), or a :class:`KgrValidationError`."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < ge:
        raise KgrValidationError(f"{name} must be an integer >= {ge}, got {x!r}")
    return int(x)
