"""The clipped policy-gradient loss of GRPO, Dr.GRPO and PPO at token level, as torch
functions. The same formulas as `@dreamgym/core`'s `ppo-loss.ts` (per step there, per token
here):

- ratio `r = exp(logp - behaviour)` against the log-probability the acting policy reported;
- clipped surrogate `max(-A r, -A clip(r, 1 - clip_low, 1 + clip_high))`, with an optional dual
  clip `min(., -A c)` for `A < 0`;
- k3 estimate of KL(pi || ref): `exp(ref - logp) - (ref - logp) - 1`;
- entropy bonus `- entropy_coefficient * H`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LossConfig:
    clip_low: float = 0.2
    clip_high: float = 0.28
    dual_clip: float | None = None
    kl_coefficient: float = 0.0
    entropy_coefficient: float = 0.0

    @staticmethod
    def from_json(value: dict | None) -> "LossConfig":
        value = value or {}
        config = LossConfig(
            clip_low=float(value.get("clipLow", 0.2)),
            clip_high=float(value.get("clipHigh", 0.28)),
            dual_clip=None if value.get("dualClip") is None else float(value["dualClip"]),
            kl_coefficient=float(value.get("klCoefficient", 0.0)),
            entropy_coefficient=float(value.get("entropyCoefficient", 0.0)),
        )
        if not 0 < config.clip_low < 1:
            raise ValueError(f"loss.clipLow must be in (0, 1), got {config.clip_low}")
        if not config.clip_high > 0:
            raise ValueError(f"loss.clipHigh must be positive, got {config.clip_high}")
        if config.dual_clip is not None and not config.dual_clip > 1:
            raise ValueError(f"loss.dualClip must be greater than 1, got {config.dual_clip}")
        if config.kl_coefficient < 0 or config.entropy_coefficient < 0:
            raise ValueError("loss.klCoefficient and loss.entropyCoefficient must be non-negative")
        return config


@dataclass
class TokenLoss:
    """Per-token terms (same shape as the log-probabilities)."""

    loss: torch.Tensor
    policy_loss: torch.Tensor
    kl: torch.Tensor
    clipped: torch.Tensor
    ratio: torch.Tensor


def clipped_surrogate(
    logprob: torch.Tensor, behaviour: torch.Tensor, advantage: torch.Tensor, config: LossConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, clipped, ratio) of the clipped (and optionally dual-clipped) surrogate."""
    ratio = torch.exp(logprob - behaviour)
    clipped_ratio = torch.clamp(ratio, 1 - config.clip_low, 1 + config.clip_high)
    unclipped_loss = -advantage * ratio
    clipped_loss = -advantage * clipped_ratio
    loss = torch.maximum(unclipped_loss, clipped_loss)
    clipped = clipped_loss > unclipped_loss
    if config.dual_clip is not None:
        cap = -advantage * config.dual_clip
        use_cap = (advantage < 0) & (cap < loss)
        loss = torch.where(use_cap, cap, loss)
        clipped = clipped | use_cap
    return loss, clipped, ratio


def k3_kl(logprob: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || ref) at sampled tokens; non-negative."""
    difference = reference - logprob
    return torch.exp(difference) - difference - 1


def token_loss(
    logprob: torch.Tensor,
    behaviour: torch.Tensor,
    advantage: torch.Tensor,
    config: LossConfig,
    *,
    reference: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
) -> TokenLoss:
    """The full per-token loss: surrogate + beta * k3 - alpha * H."""
    policy_loss, clipped, ratio = clipped_surrogate(logprob, behaviour, advantage, config)
    kl = torch.zeros_like(logprob)
    loss = policy_loss
    if config.kl_coefficient > 0:
        if reference is None:
            raise ValueError("klCoefficient > 0 needs reference log-probabilities for every sample")
        kl = k3_kl(logprob, reference)
        loss = loss + config.kl_coefficient * kl
    if config.entropy_coefficient > 0 and entropy is not None:
        loss = loss - config.entropy_coefficient * entropy
    return TokenLoss(loss=loss, policy_loss=policy_loss, kl=kl, clipped=clipped, ratio=ratio)
