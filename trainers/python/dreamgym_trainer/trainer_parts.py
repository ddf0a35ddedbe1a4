"""What the update (`policy_update.py`) and state (`trainer_state.py`) functions use of the
trainer that calls them: a structural type, so that they need not import `PolicyTrainer`
(which imports them) and the modules form no circle.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from .gguf_io import GgufFile
from .packed_forward import PackedForward
from .trainer_options import TrainerOptions


class TrainerParts(Protocol):
    """The model, its optimiser, its snapshots and what names them (`PolicyTrainer` has them)."""

    options: TrainerOptions
    device: torch.device
    causal_lm: torch.nn.Module
    # The peft wrapper in LoRA mode, else None.
    peft_model: Any
    optimizer: torch.optim.Optimizer
    packed: PackedForward
    steps: int
    snapshots: dict[str, list[torch.Tensor]]
    named_trainable: list[tuple[str, torch.nn.Parameter]]
    trainable: list[torch.nn.Parameter]
    # The base model's file: its header, and its size, time and SHA-256.
    source: GgufFile
    fingerprint: dict

    def set_learning_rate(self, learning_rate: float | None) -> None: ...

    def step(self, max_grad_norm: float | None) -> float: ...
