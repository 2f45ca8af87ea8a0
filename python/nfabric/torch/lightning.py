"""NEURON-Fabric under PyTorch Lightning: one callback.

    trainer = L.Trainer(strategy="ddp", callbacks=[NFabric("backbone=g-binary,head=fp32",
                                                           control=nt.control.Warmup(100))])

Lightning builds the DistributedDataParallel model (or, with
ModelParallelStrategy, the fully_shard()ed one) inside ``trainer.fit``,
after the callbacks exist: ``DDPStrategy(ddp_comm_hook=...)`` cannot take
the hook, because its state needs that model. The callback creates the
Fabric first (every check that needs no model runs in its constructor)
and binds it in ``on_fit_start``, when ``trainer.strategy.model`` is the
wrapped model and ``trainer.optimizers`` exist; it reports each batch's
loss to the controller and warns at the end of training if no low-bit
step ran. Its ``state_dict`` is the Fabric's of every rank (gathered:
Lightning writes rank 0's checkpoint), so ``ckpt_path=`` resumes the
residuals, the step counter and the controller exactly.

Trap: a LightningModule already has a ``fabric`` attribute (Lightning
Fabric); keep the handle in the callback (``callback.fabric``) or name it
otherwise (``self.nfabric``), never ``self.fabric``.
"""

from __future__ import annotations

from typing import Any, Dict

from .hook import AllRanks, Fabric

__all__ = ["NFabric"]


def _callback_base() -> type:
    try:
        from lightning.pytorch import Callback
        return Callback
    except ImportError:
        pass
    try:
        from pytorch_lightning import Callback  # type: ignore[no-redef]
        return Callback
    except ImportError:
        return object


class NFabric(_callback_base()):  # type: ignore[misc]
    """A Lightning callback binding a Fabric to the trainer's wrapped model.
    Arguments as nfabric.torch.Fabric (policy, groups, control, ...)."""

    def __init__(self, policy: Any = "g-binary", **kwargs: Any) -> None:
        super().__init__()
        self.fabric = Fabric(policy, **kwargs)

    @property
    def state_key(self) -> str:
        return "NFabric"

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        if self.fabric.bound:
            return  # a second fit() on the same trainer: already bound
        opts = list(getattr(trainer, "optimizers", []) or [])
        self.fabric.bind(trainer.strategy.model, opts[0] if opts else None)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None and hasattr(loss, "detach"):
            self.fabric.observe(float(loss.detach()))

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.fabric.check_low_bit_ran()

    def state_dict(self) -> Dict[str, Any]:
        return AllRanks(self.fabric).state_dict() if self.fabric.bound else {}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        # Lightning restores callbacks before it wraps the model: the Fabric
        # keeps the state and applies it when on_fit_start binds.
        if state_dict:
            self.fabric.load_state_dict(state_dict)

