"""The token-level clipped loss against hand-computed numbers (the same cases as core's
ppo-loss tests)."""

from __future__ import annotations

import math

import pytest
import torch

from dreamgym_trainer.policy_loss import LossConfig, clipped_surrogate, k3_kl, token_loss


def value(tensor: torch.Tensor) -> float:
    return float(tensor.reshape(-1)[0])


def test_surrogate_unclipped_inside_the_range():
    config = LossConfig()
    loss, clipped, ratio = clipped_surrogate(torch.tensor([math.log(1.1)]), torch.tensor([0.0]), torch.tensor(2.0), config)
    assert value(ratio) == pytest.approx(1.1)
    assert value(loss) == pytest.approx(-2.2)
    assert not bool(clipped[0])


def test_surrogate_clips_above_for_positive_advantages():
    config = LossConfig(clip_low=0.2, clip_high=0.28)
    loss, clipped, _ = clipped_surrogate(torch.tensor([math.log(1.5)]), torch.tensor([0.0]), torch.tensor(1.0), config)
    assert value(loss) == pytest.approx(-1.28)
    assert bool(clipped[0])


def test_surrogate_clips_below_for_negative_advantages_and_dual_clip_caps():
    config = LossConfig(clip_low=0.2, clip_high=0.28)
    loss, clipped, _ = clipped_surrogate(torch.tensor([math.log(0.5)]), torch.tensor([0.0]), torch.tensor(-1.0), config)
    assert value(loss) == pytest.approx(0.8)
    assert bool(clipped[0])
    dual = LossConfig(dual_clip=3.0)
    loss, clipped, _ = clipped_surrogate(torch.tensor([math.log(5.0)]), torch.tensor([0.0]), torch.tensor(-1.0), dual)
    assert value(loss) == pytest.approx(3.0)
    assert bool(clipped[0])


def test_k3_is_zero_at_the_reference_and_positive_elsewhere():
    assert value(k3_kl(torch.tensor([-1.0]), torch.tensor([-1.0]))) == pytest.approx(0.0)
    # ref - logp = 0.5: e^0.5 - 0.5 - 1
    assert value(k3_kl(torch.tensor([-1.5]), torch.tensor([-1.0]))) == pytest.approx(math.exp(0.5) - 1.5)


def test_token_loss_adds_kl_and_entropy_and_has_the_right_gradient():
    config = LossConfig(kl_coefficient=0.1, entropy_coefficient=0.01)
    logprob = torch.tensor([-1.0, -2.0], requires_grad=True)
    terms = token_loss(
        logprob,
        torch.tensor([-1.0, -2.0]),
        torch.tensor(1.0),
        config,
        reference=torch.tensor([-1.0, -2.5]),
        entropy=torch.tensor([0.5, 0.5]),
    )
    expected_kl = math.exp(-0.5) + 0.5 - 1
    assert float(terms.kl[1].detach()) == pytest.approx(expected_kl)
    assert float(terms.loss[1].detach()) == pytest.approx(-1.0 + 0.1 * expected_kl - 0.005)
    terms.loss.sum().backward()
    # d/dlogp of -A r at r = 1 is -A; of k3 is 1 - e^(ref - logp).
    assert float(logprob.grad[0]) == pytest.approx(-1.0)
    assert float(logprob.grad[1]) == pytest.approx(-1.0 + 0.1 * (1 - math.exp(-0.5)))


def test_kl_needs_a_reference():
    with pytest.raises(ValueError, match="reference"):
        token_loss(torch.tensor([-1.0]), torch.tensor([-1.0]), torch.tensor(1.0), LossConfig(kl_coefficient=0.1))


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="clipLow"):
        LossConfig.from_json({"clipLow": 1.5})
    with pytest.raises(ValueError, match="dualClip"):
        LossConfig.from_json({"dualClip": 0.5})
