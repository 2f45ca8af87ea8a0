"""Layer groups: which parameters share one aggregation rule.

Groups are given by module-name patterns, ``{"head": ["fc"], "backbone":
["*"]}``: a pattern matches a parameter name (``layer1.0.conv1.weight``)
when fnmatch matches it, or when it names a module the parameter belongs
to (``fc`` matches ``fc.weight``). The first group in order whose pattern
matches wins, so ``"*"`` in the last group takes the rest. The default
puts the model's final classifier (its last ``torch.nn.Linear``) in
``head`` and everything else in ``backbone``.

Every element also gets its index in the model's flattened parameter
vector (``model.named_parameters()`` order, as
``torch.nn.utils.parameters_to_vector`` lays it out): the positional
G-Ternary gate depends on it, never on where a DDP bucket put the element.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import torch

__all__ = ["GroupError", "Assignment", "assign_groups", "default_groups"]


class GroupError(ValueError):
    """The model's parameters cannot be put into groups as asked."""


@dataclasses.dataclass
class ParamInfo:
    name: str
    param: torch.nn.Parameter
    group: str
    flat_base: int  # index of element 0 in the flattened parameter vector

    @property
    def numel(self) -> int:
        return self.param.numel()


@dataclasses.dataclass
class Assignment:
    """Where every trainable parameter went."""

    groups: List[str]
    params: List[ParamInfo]  # trainable parameters, model order
    patterns: Dict[str, List[str]]

    def __post_init__(self) -> None:
        self._by_id = {id(p.param): p for p in self.params}

    def info(self, p: torch.Tensor) -> ParamInfo:
        try:
            return self._by_id[id(p)]
        except KeyError:
            raise GroupError("a gradient bucket holds a parameter the model's assignment does not know "
                             "(was the hook registered on another model?)") from None

    def members(self, group: str) -> List[ParamInfo]:
        return [p for p in self.params if p.group == group]

    def elements(self, group: str) -> int:
        return sum(p.numel for p in self.members(group))

    def total(self) -> int:
        return sum(p.numel for p in self.params)

    def report(self) -> str:
        """A table of every parameter, its group and size, and the totals."""
        w = max([len(p.name) for p in self.params] + [9])
        lines = [f"{'parameter':<{w}}  {'group':<10} {'elements':>10}  flat index"]
        for p in self.params:
            lines.append(f"{p.name:<{w}}  {p.group:<10} {p.numel:>10}  {p.flat_base}")
        tot = self.total()
        for g in self.groups:
            n = self.elements(g)
            lines.append(f"group {g}: {len(self.members(g))} tensors, {n} elements ({100.0 * n / max(tot, 1):.2f}%), "
                         f"patterns {self.patterns[g]}")
        return "\n".join(lines)


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    # DistributedDataParallel and DataParallel keep the user's model in
    # .module; Lightning wraps its LightningModule once more (in
    # ._forward_module), so group patterns name the user's modules.
    inner = getattr(model, "module", None)
    if isinstance(inner, torch.nn.Module) and type(model).__name__ in ("DistributedDataParallel", "DataParallel"):
        model = inner
    fwd = getattr(model, "_forward_module", None)
    if isinstance(fwd, torch.nn.Module) and type(model).__name__.endswith("WrapperBase"):
        model = fwd
    return model


def default_groups(model: torch.nn.Module) -> Dict[str, List[str]]:
    """``head`` = the model's last torch.nn.Linear with parameters (the final
    classifier: ResNet's ``fc``, DistilBERT's ``classifier``), ``backbone`` =
    everything else."""
    model = _unwrap(model)
    last = None
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and any(p.requires_grad for p in mod.parameters(recurse=False)):
            last = name
    if last is None:
        raise GroupError(f"cannot find a final classifier in {type(model).__name__}: it has no torch.nn.Linear "
                         "module with trainable parameters; pass groups= explicitly, e.g. "
                         "{'head': ['decoder'], 'backbone': ['*']}")
    if last == "":
        raise GroupError(f"{type(model).__name__} is a single Linear layer: there is no backbone to group apart "
                         "from the head; pass groups={'head': ['*']}")
    return {"head": [last], "backbone": ["*"]}


def _matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern) or name.startswith(pattern + ".")


def assign_groups(model: torch.nn.Module, groups: Optional[Mapping[str, Sequence[str]]] = None) -> Assignment:
    """Puts every trainable parameter of model into a group; raises
    GroupError naming the parameters no pattern matches and the groups no
    parameter falls into."""
    model = _unwrap(model)
    given = groups if groups is not None else default_groups(model)
    if not given:
        raise GroupError("no groups given")
    for g, p in given.items():
        if not isinstance(g, str) or not g or g == "*":
            raise GroupError(f"group name {g!r} is not a usable name")
        if isinstance(p, str) or not p or not all(isinstance(x, str) for x in p):
            raise GroupError(f"group {g!r}: patterns must be a non-empty list of strings, got {p!r}")
    pats = {g: list(p) for g, p in given.items()}
    infos: List[ParamInfo] = []
    unmatched: List[str] = []
    flat = 0
    named = list(model.named_parameters())
    if not any(p.requires_grad for _, p in named):
        raise GroupError(f"{type(model).__name__} has no trainable parameters to aggregate")
    for name, prm in named:
        if prm.requires_grad:
            g = next((g for g, ps in pats.items() if any(_matches(name, x) for x in ps)), None)
            if g is None:
                unmatched.append(name)
            else:
                infos.append(ParamInfo(name, prm, g, flat))
        flat += prm.numel()
    if unmatched:
        more = f" and {len(unmatched) - 10} more" if len(unmatched) > 10 else ""
        raise GroupError(f"parameters {unmatched[:10]}{more} match no group pattern {pats}; "
                         "add a catch-all group with pattern '*'")
    empty = [g for g in pats if not any(i.group == g for i in infos)]
    if empty:
        raise GroupError(f"group(s) {empty} match no trainable parameter (patterns {pats})")
    return Assignment(list(pats), infos, pats)


def group_slices(a: Assignment, group: str) -> List[Tuple[ParamInfo, int]]:
    """The group's parameters and each one's offset in the group's
    concatenated vector (model order)."""
    out, off = [], 0
    for p in a.members(group):
        out.append((p, off))
        off += p.numel
    return out
