"""NEURON-Fabric for PyTorch.

* ``register(ddp_model, policy=..., groups=..., control=...)``: a DDP
  communication hook running FP32 / G-Binary / G-Ternary per layer group.
* ``virtual.VirtualWorkers``: W virtual workers on one device, aggregated
  by the same functions.
* ``groups``, ``control``, ``stats``: layer groups by module-name
  patterns, mode controllers, traffic statistics.
"""

from . import control, groups, serve, stats, virtual
from .groups import GroupError, assign_groups, default_groups
from .hook import Fabric, register
from .virtual import VirtualWorkers

__all__ = ["register", "Fabric", "VirtualWorkers", "GroupError", "assign_groups", "default_groups",
           "control", "groups", "serve", "stats", "virtual"]
