r"""Environmental reward of a graph change: coverage, entropy, constraints, temporal term.

Conventions
-----------
* The reward of a change :math:`G_t \to G_{t+1}` follows Agentic-KGR Eq. 11:
  :math:`R_{\text{env}} = \Delta\mathrm{Cov}_\kappa + \Delta\mathrm{Ent}_{VN}
  - \lambda_{\text{contr}} R_{\text{contr}} - \lambda_T\,T`, with optional weights on the first
  two terms (both 1 in the paper) for ablations.
* Constraint functions :math:`g_j` are plain numbers supplied by the caller: :math:`g_j > 0`
  is a violation of that magnitude, :math:`g_j \le 0` is satisfied. No schema is read here.
  Suggested scale: ``1.0`` for a hard violation (a type the schema forbids, a self-loop), a
  fraction in ``(0, 1)`` for a soft, learned expectation (e.g. one minus the share of promoted
  edges of this relation whose subject has this type), and the number of conflicting objects for
  a functional relation.
* The temporal term :math:`T = \exp(-\beta\|L_{t+1} - L_t\|_F)` is computed from the list of
  changed edges alone, never from the Laplacians. Unweighted changes collapse duplicates (simple
  graph); weighted changes add up. Self-loops do not change a Laplacian and are ignored.
* Sign of :math:`T`, as Eq. 11 states it: :math:`T \in (0, 1]` is largest (1) for no change, so
  subtracting :math:`\lambda_T T` penalises *small* changes more than large ones, although the
  paper's prose says the term "prevents abrupt structural changes". kgr implements the equation
  as written. For a single unweighted edge :math:`\|\Delta L\|_F = 2`, so every one-edge
  candidate has the same :math:`T = e^{-2\beta}`: a constant shift of :math:`R_{\text{env}}`
  that does not change how candidates rank.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from kgr.errors import KgrValidationError
from kgr.gauge.validate import real

__all__ = [
    "ConstraintInputs",
    "RewardTerms",
    "constraint_penalty",
    "laplacian_change_norm",
    "temporal_term",
    "environmental_reward",
]

Finite = Annotated[float, Field(allow_inf_nan=False)]


class ConstraintInputs(BaseModel):
    """Constraint values :math:`g_j` for one candidate edge (positive means violated).

    Parameters
    ----------
    domain_violation : float
        Subject type outside the relation's domain (``1.0`` declared, a fraction if learned).
    range_violation : float
        Object type outside the relation's range.
    functional_conflict : float
        For a functional relation, how many different objects the subject already has.
    self_loop : float
        ``1.0`` when subject and object are the same node (the policy also detects this itself).
    duplicate_entity : float
        ``1.0`` when an endpoint new to the promoted graph looks like a misspelling of an entity of
        the same type that already holds this very fact with the other endpoint (see
        :meth:`kgr.promotion.constraints.PromotedIndex.constraints`).
    other : tuple of float
        Any further constraint values.
    notes : tuple of str
        Human-readable details for the decision's reason (e.g. which entity a near-duplicate
        resembles); not constraint values.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    domain_violation: Finite = 0.0
    range_violation: Finite = 0.0
    functional_conflict: Finite = 0.0
    self_loop: Finite = 0.0
    duplicate_entity: Finite = 0.0
    other: tuple[Finite, ...] = ()
    notes: tuple[str, ...] = ()

    def values(self) -> tuple[float, ...]:
        """All :math:`g_j` in a fixed order: domain, range, functional, self-loop, duplicate, then ``other``."""
        return (self.domain_violation, self.range_violation, self.functional_conflict, self.self_loop,
                self.duplicate_entity, *self.other)

    def violated(self) -> list[str]:
        """Names of the constraints with :math:`g_j > 0`, for reason strings."""
        names = (["domain", "range", "functional", "self_loop", "duplicate_entity"]
                 + [f"other[{i}]" for i in range(len(self.other))])
        return [name for name, g in zip(names, self.values()) if g > 0]


class RewardTerms(BaseModel):
    r"""The terms of :math:`R_{\text{env}}` for one candidate, as recorded with a decision."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    delta_cov: float
    delta_vn: float
    r_contr: float
    temporal: float
    r_env: float


def constraint_penalty(values: Iterable[float]) -> float:
    r"""Squared-hinge penalty of constraint values.

    .. math::

        R_{\text{contr}} = \sum_j \max\bigl(0, g_j\bigr)^2

    Parameters
    ----------
    values : iterable of float
        The constraint values :math:`g_j` (e.g. ``ConstraintInputs(...).values()``).

    Returns
    -------
    penalty : float
        :math:`R_{\text{contr}} \ge 0`; ``0.0`` for no values or none violated.

    Raises
    ------
    KgrValidationError
        A value that is not a finite number.

    Notes
    -----
    :math:`O(J)`. Satisfied constraints with slack (:math:`g_j < 0`) do not offset violations.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Definition 3, Eq. 8; used in Eq. 11.

    Examples
    --------
    >>> constraint_penalty([1.0, -0.5, 0.5])
    1.25
    >>> constraint_penalty(ConstraintInputs(functional_conflict=2).values())
    4.0
    """
    total = 0.0
    for g in values:
        g = real("constraint value", g)
        if g > 0:
            total += g * g
    return total


def _changes(edges: Iterable[Sequence[Any]], *, weighted: bool, sign: float, acc: dict) -> None:
    seen: set[frozenset] = set()
    for e in edges:
        try:
            n = len(e)
        except TypeError:
            raise KgrValidationError(f"an edge must be a (u, v) or (u, v, w) tuple, got {e!r}") from None
        if n not in (2, 3) or (weighted and n != 3):
            raise KgrValidationError(
                f"an edge must be a {'(u, v, w)' if weighted else '(u, v) or (u, v, w)'} tuple, got {e!r}"
            )
        u, v = e[0], e[1]
        if u == v:
            continue
        pair = frozenset((u, v))
        if weighted:
            acc[pair] += sign * real("edge weight", e[2], ge=0.0)
        elif pair not in seen:
            seen.add(pair)
            acc[pair] += sign


def laplacian_change_norm(
    added: Iterable[Sequence[Any]] = (),
    removed: Iterable[Sequence[Any]] = (),
    *,
    weighted: bool = False,
) -> float:
    r"""Frobenius norm of the Laplacian change caused by adding and removing edges.

    .. math::

        \Delta L = \sum_{e=(u,v)} \delta_e\,(e_u - e_v)(e_u - e_v)^{\top}, \qquad
        \|\Delta L\|_F^2 = \sum_{x} \Bigl(\sum_{e \ni x} \delta_e\Bigr)^2 + 2\sum_{e} \delta_e^2

    where :math:`\delta_e` is the net weight change of the pair :math:`e` (``+w`` added,
    ``-w`` removed).

    Parameters
    ----------
    added, removed : iterable of tuple
        ``(u, v)`` or ``(u, v, w)`` edges that were added to / removed from the graph. They must
        be real changes of the graph (the function does not see the graph).
    weighted : bool, default False
        False: each distinct pair changes by 1 (duplicates collapse; a pair both added and
        removed cancels). True: ``(u, v, w)`` tuples whose weights add up.

    Returns
    -------
    norm : float
        :math:`\|L_{t+1} - L_t\|_F \ge 0`.

    Raises
    ------
    KgrValidationError
        Malformed edges or weights.

    Notes
    -----
    :math:`O(c)` time and memory for :math:`c` changed edges, independent of the graph size.
    Self-loops are ignored. One unweighted edge gives :math:`\sqrt{1+1+2} = 2`.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Eq. 11 and the temporal regulariser of Sec. 3.

    Examples
    --------
    >>> laplacian_change_norm([("a", "b")])
    2.0
    >>> round(laplacian_change_norm([("a", "b"), ("b", "c")]), 6)  # sqrt(1 + 4 + 1 + 4 * 1)
    3.162278
    >>> laplacian_change_norm([("a", "b")], [("b", "a")])
    0.0
    """
    acc: dict[frozenset, float] = defaultdict(float)
    _changes(added, weighted=weighted, sign=1.0, acc=acc)
    _changes(removed, weighted=weighted, sign=-1.0, acc=acc)
    diag: dict[Hashable, float] = defaultdict(float)
    off = 0.0
    for pair, dw in acc.items():
        if dw == 0.0:
            continue
        for x in pair:
            diag[x] += dw
        off += 2.0 * dw * dw
    return math.sqrt(math.fsum(d * d for d in diag.values()) + off)


def temporal_term(
    added: Iterable[Sequence[Any]] = (),
    removed: Iterable[Sequence[Any]] = (),
    *,
    beta: float = 0.5,
    weighted: bool = False,
) -> float:
    r"""Temporal consistency term of a graph change.

    .. math::

        T(G_t, G_{t+1}) = \exp\bigl(-\beta\,\|L_{G_{t+1}} - L_{G_t}\|_F\bigr)

    Parameters
    ----------
    added, removed : iterable of tuple
        The changed edges, as in :func:`laplacian_change_norm`.
    beta : float, default 0.5
        Rate :math:`\beta \ge 0`.
    weighted : bool, default False
        See :func:`laplacian_change_norm`.

    Returns
    -------
    T : float
        In :math:`(0, 1]`; ``1.0`` for no change.

    Raises
    ------
    KgrValidationError
        ``beta`` negative or not finite; malformed edges.

    Notes
    -----
    :math:`O(c)` for :math:`c` changed edges. See the module notes on the sign of :math:`T` in
    Eq. 11.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Eq. 11 and Sec. 3 ("temporal consistency regularizer").

    Examples
    --------
    >>> round(temporal_term([("a", "b")], beta=0.5), 6)  # exp(-0.5 * 2)
    0.367879
    >>> temporal_term()
    1.0
    """
    beta = real("beta", beta, ge=0.0)
    return math.exp(-beta * laplacian_change_norm(added, removed, weighted=weighted))


def environmental_reward(
    *,
    delta_cov: float,
    delta_vn: float,
    r_contr: float,
    temporal: float,
    lambda_contr: float = 1.0,
    lambda_t: float = 0.1,
    weight_cov: float = 1.0,
    weight_vn: float = 1.0,
) -> float:
    r"""Environmental reward of a change.

    .. math::

        R_{\text{env}} = w_{\text{cov}}\,\Delta\mathrm{Cov}_\kappa + w_{VN}\,\Delta\mathrm{Ent}_{VN}
        - \lambda_{\text{contr}}\,R_{\text{contr}} - \lambda_T\,T

    Parameters
    ----------
    delta_cov : float
        Coverage gain (:func:`~kgr.gauge.coverage.coverage_gain`).
    delta_vn : float
        Von Neumann entropy gain in nats (:func:`~kgr.gauge.entropy.vn_entropy_gain`).
    r_contr : float
        Constraint penalty (:func:`constraint_penalty`), :math:`\ge 0`.
    temporal : float
        Temporal term (:func:`temporal_term`), in :math:`[0, 1]`.
    lambda_contr : float, default 1.0
        Weight of the constraint penalty, :math:`\ge 0`.
    lambda_t : float, default 0.1
        Weight of the temporal term, :math:`\ge 0`.
    weight_cov, weight_vn : float, default 1.0
        Weights of the two gains (1 in the paper; 0 switches a term off for ablations).

    Returns
    -------
    r_env : float
        The reward.

    Raises
    ------
    KgrValidationError
        A non-finite input, a negative weight or penalty, or ``temporal`` outside ``[0, 1]``.

    Notes
    -----
    :math:`O(1)`. The terms have different units (coverage in "nodes", entropy in nats); the
    weights are where a deployment rescales them.

    References
    ----------
    Agentic-KGR (004_0801b5666d9a46a7), Definition 4, Eq. 11.

    Examples
    --------
    >>> round(environmental_reward(delta_cov=0.5, delta_vn=0.02, r_contr=0.0, temporal=0.5, lambda_t=0.1), 12)
    0.47
    """
    delta_cov, delta_vn = real("delta_cov", delta_cov), real("delta_vn", delta_vn)
    r_contr = real("r_contr", r_contr, ge=0.0)
    temporal = real("temporal", temporal, ge=0.0, le=1.0)
    lambda_contr, lambda_t = real("lambda_contr", lambda_contr, ge=0.0), real("lambda_t", lambda_t, ge=0.0)
    weight_cov, weight_vn = real("weight_cov", weight_cov, ge=0.0), real("weight_vn", weight_vn, ge=0.0)
    return float(weight_cov * delta_cov + weight_vn * delta_vn - lambda_contr * r_contr - lambda_t * temporal)
