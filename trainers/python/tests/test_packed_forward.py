"""The packed forward's activation checkpointing: recomputing the layers in the backward pass
gives the gradients keeping them gives, with the real SmolLM2 weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dreamgym_trainer import packed_forward
from dreamgym_trainer.policy_model import PolicyTrainer
from dreamgym_trainer.samples import Sample
from dreamgym_trainer.trainer_options import TrainerOptions


def gradients(trainer: PolicyTrainer, samples: list[Sample]) -> list[torch.Tensor]:
    for _, parameter in trainer.named_trainable:
        parameter.grad = None
    outputs = trainer.packed.forward(samples, want_entropy=False)
    torch.stack([output.logprob for output in outputs]).sum().backward()
    return [parameter.grad.clone() for _, parameter in trainer.named_trainable]


@pytest.mark.parametrize("top_layers", [None, 2])
def test_recomputing_the_layers_gives_the_same_gradients(
    model_path: Path, monkeypatch: pytest.MonkeyPatch, top_layers: int | None
):
    trainer = PolicyTrainer(TrainerOptions(model=str(model_path), lora_rank=4, lora_top_layers=top_layers, seed=3))
    # LoRA's B starts at zero: move it so that every adapter matrix gets a gradient.
    with torch.no_grad():
        for _, parameter in trainer.named_trainable:
            parameter.add_(torch.randn_like(parameter) * 0.01)
    generator = torch.Generator().manual_seed(1)
    samples = [
        Sample(
            prompt=torch.randint(10, 40_000, (length,), generator=generator).tolist(),
            continuations=[torch.randint(10, 40_000, (6,), generator=generator).tolist()],
            choice=None,
            behaviour=None,
            reference=None,
            advantage=1.0,
        )
        for length in (90, 130)
    ]
    recomputed = 0
    forward = packed_forward._Recomputed.forward

    def counting(self, *args, **kwargs):
        nonlocal recomputed
        recomputed += 1
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(packed_forward._Recomputed, "forward", counting)
    monkeypatch.setattr(packed_forward, "RECOMPUTE_ABOVE_BYTES", 1 << 62)
    kept = gradients(trainer, samples)
    assert recomputed == 0
    monkeypatch.setattr(packed_forward, "RECOMPUTE_ABOVE_BYTES", 0)
    again = gradients(trainer, samples)
    layers = 30 - trainer.packed.boundary
    assert recomputed == layers
    assert len(kept) == len(again) > 0
    for a, b in zip(kept, again):
        assert a.abs().sum() > 0
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    # The layers are the model's own again afterwards.
    assert not any(isinstance(layer, packed_forward._Recomputed) for layer in trainer.causal_lm.model.layers)
