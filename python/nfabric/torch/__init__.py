"""NEURON-Fabric for PyTorch.

* ``register(model, policy=..., groups=..., control=...)``: FP32 / G-Binary /
  G-Ternary (and INT8 / BFP8) per layer group in a DistributedDataParallel
  model's communication hook or an FSDP2 model's reduce-scatter;
  ``Fabric(policy, ...)`` before the model exists, ``.bind(model)`` later
  (``lightning.NFabric`` does it under Lightning); ``state_dict()`` for
  torch.distributed.checkpoint.
* ``virtual.VirtualWorkers``: W virtual workers on one device, aggregated
  by the same functions.
* ``groups``, ``control``, ``stats``: layer groups by module-name
  patterns, mode controllers, traffic statistics.
"""

from . import control, groups, serve, stats, virtual
from .groups import GroupError, assign_groups, default_groups
from .hook import AllRanks, Fabric, register
from .virtual import VirtualWorkers

__all__ = ["register", "Fabric", "AllRanks", "VirtualWorkers", "GroupError", "assign_groups", "default_groups",
           "control", "groups", "serve", "stats", "virtual"]
