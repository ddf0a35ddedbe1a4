"""The two ways the trainer's weights learn: the clipped policy-gradient update at token level
against the behaviour log-probabilities (GRPO, Dr.GRPO, PPO; k3 KL to a reference; entropy),
and behaviour cloning (negative log-likelihood of demonstrations). Both take one optimiser
step per mini-batch, accumulating gradients over micro-batches that fit `maxBatchTokens`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

import torch

from .native_memory import release_freed_memory
from .packed_forward import answer_logprobs
from .policy_loss import LossConfig, k3_kl, token_loss
from .samples import Sample, SampleOutput, check_schedule, parse_sample

if TYPE_CHECKING:
    from .trainer_parts import TrainerParts


def clipped_update(
    trainer: TrainerParts,
    raw_samples: list[dict],
    schedule: list[list[list[int]]],
    loss_config: dict | None,
    max_grad_norm: float | None,
    learning_rate: float | None,
) -> dict:
    """The clipped policy-gradient update: `schedule` lists, per epoch, its mini-batches
    (sample indices, in order). Behaviour log-probabilities missing from a sample are
    taken from the weights before the first step."""
    started = time.perf_counter()
    samples = [parse_sample(s, i) for i, s in enumerate(raw_samples)]
    config = LossConfig.from_json(loss_config)
    trainer.set_learning_rate(learning_rate)
    for sample in samples:
        if config.kl_coefficient > 0 and sample.reference is None:
            raise ValueError("loss.klCoefficient > 0 needs `reference` on every sample")
    check_schedule(schedule, len(samples))
    first_epoch = schedule[0] if schedule else []
    needs_pre_pass = any(s.behaviour is None for s in samples) or len(first_epoch) > 1
    mismatch: dict[str, float] | None = None
    if needs_pre_pass and samples:
        before = trainer.packed.evaluate(samples)
        mismatch = _mismatch(samples, before)
        for sample, output in zip(samples, before):
            if sample.behaviour is None:
                sample.behaviour = (
                    float(output.logprob) if sample.is_choice else [float(v) for v in output.token_logprobs]
                )
    totals = {"loss": 0.0, "policyLoss": 0.0, "kl": 0.0, "entropy": 0.0, "clipped": 0.0, "ratio": 0.0, "units": 0}
    grad_norms: list[float] = []
    want_entropy = True
    for epoch_index, epoch in enumerate(schedule):
        for batch_index, mini_batch in enumerate(epoch):
            if not mini_batch:
                continue
            trainer.optimizer.zero_grad(set_to_none=True)
            units = sum(samples[i].units for i in mini_batch)
            normaliser = units if trainer.options.aggregation == "token-mean" else len(mini_batch)
            first_outputs: list[tuple[Sample, SampleOutput]] = []
            for micro in trainer.packed.micro_batches(samples, mini_batch):
                outputs = trainer.packed.forward([samples[i] for i in micro], want_entropy)
                micro_loss = torch.zeros((), device=trainer.device)
                for index, output in zip(micro, outputs):
                    sample = samples[index]
                    terms = _sample_loss(sample, output, config, trainer.device)
                    weight = 1.0 if trainer.options.aggregation == "token-mean" else 1.0 / sample.units
                    micro_loss = micro_loss + terms.loss.sum() * weight
                    with torch.no_grad():
                        totals["loss"] += float(terms.loss.sum())
                        totals["policyLoss"] += float(terms.policy_loss.sum())
                        totals["kl"] += float(terms.kl.sum())
                        if output.entropy is not None:
                            totals["entropy"] += float(output.entropy.sum())
                        totals["clipped"] += float(terms.clipped.float().sum())
                        totals["ratio"] += float(terms.ratio.sum())
                        totals["units"] += sample.units
                    if epoch_index == 0 and batch_index == 0 and mismatch is None:
                        # Detached: an output keeps its micro-batch's graph (and, through the
                        # entropy the loss may not use, its vocabulary-wide log-probabilities)
                        # alive; kept for the whole mini-batch they took the worker past 20 GB.
                        first_outputs.append((sample, _detached(output)))
                (micro_loss / normaliser).backward()
                del outputs, micro_loss
                release_freed_memory()
            if first_outputs:
                mismatch = _mismatch([s for s, _ in first_outputs], [o for _, o in first_outputs])
            grad_norms.append(trainer.step(max_grad_norm))
    units = max(1, totals["units"])
    mismatch = mismatch or {"behaviourMismatch": 0.0, "tokenMismatch": 0.0, "maxTokenMismatch": 0.0}
    return {
        "loss": totals["loss"] / units,
        "policyLoss": totals["policyLoss"] / units,
        "kl": totals["kl"] / units,
        "entropy": totals["entropy"] / units,
        "clipFraction": totals["clipped"] / units,
        "meanRatio": totals["ratio"] / units,
        "gradNorm": sum(grad_norms) / max(1, len(grad_norms)),
        "gradientSteps": len(grad_norms),
        **mismatch,
        "seconds": time.perf_counter() - started,
        "steps": trainer.steps,
    }


def _sample_loss(sample: Sample, output: SampleOutput, config: LossConfig, device: torch.device):
    advantage = torch.tensor(sample.advantage, device=device)
    if sample.is_choice:
        logprob = output.logprob.reshape(1)
        behaviour = torch.tensor([float(sample.behaviour)], device=device)  # type: ignore[arg-type]
        reference = None if sample.reference is None else torch.tensor([float(sample.reference)], device=device)  # type: ignore[arg-type]
        entropy = None if output.entropy is None else output.entropy.reshape(1)
        return token_loss(logprob, behaviour, advantage, config, reference=reference, entropy=entropy)
    logprob = output.token_logprobs
    behaviour = torch.tensor(sample.behaviour, dtype=torch.float32, device=device)
    if isinstance(sample.reference, list):
        reference = torch.tensor(sample.reference, dtype=torch.float32, device=device)
        return token_loss(logprob, behaviour, advantage, config, reference=reference, entropy=output.token_entropy)
    without_kl = dataclasses.replace(config, kl_coefficient=0.0)
    terms = token_loss(logprob, behaviour, advantage, without_kl, entropy=output.token_entropy)
    if config.kl_coefficient > 0 and sample.reference is not None:
        # Only the sequence's reference log-probability is known: a sequence-level k3 term,
        # spread evenly over the sample's tokens.
        reference_sum = torch.tensor(float(sample.reference), device=device)
        sequence_kl = k3_kl(output.logprob, reference_sum)
        per_token = sequence_kl / len(logprob)
        terms.kl = per_token.expand_as(logprob)
        terms.loss = terms.loss + config.kl_coefficient * terms.kl
    return terms


def behaviour_cloning(
    trainer: TrainerParts,
    raw_samples: list[dict],
    batches: list[list[int]],
    max_grad_norm: float | None,
    learning_rate: float | None,
) -> dict:
    """Behaviour cloning: for each mini-batch, one step on the negative log-likelihood of
    the demonstrated continuation (token mean for sequences, the choice's NLL for choices)."""
    started = time.perf_counter()
    samples = [parse_sample(s, i) for i, s in enumerate(raw_samples)]
    trainer.set_learning_rate(learning_rate)
    check_schedule([batches], len(samples))
    total_nll = 0.0
    count = 0
    grad_norms = []
    for mini_batch in batches:
        if not mini_batch:
            continue
        trainer.optimizer.zero_grad(set_to_none=True)
        units = sum(samples[i].units for i in mini_batch)
        for micro in trainer.packed.micro_batches(samples, mini_batch):
            chosen = [samples[i] for i in micro]
            if trainer.packed.boundary == 0 and not any(sample.is_choice for sample in chosen):
                # Sequences through every trainable layer: one padded causal batch, no masks.
                negatives = [
                    -logprobs.sum()
                    for logprobs in answer_logprobs(
                        trainer.causal_lm, trainer.device, [(s.prompt, s.continuations[0]) for s in chosen]
                    )
                ]
            else:
                negatives = [
                    -(output.logprob if sample.is_choice else output.token_logprobs.sum())
                    for sample, output in zip(chosen, trainer.packed.forward(chosen, False))
                ]
            loss = torch.stack(negatives).sum()
            total_nll += float(loss.detach())
            count += len(negatives)
            (loss / units).backward()
            del negatives, loss
            release_freed_memory()
        grad_norms.append(trainer.step(max_grad_norm))
    return {
        "negativeLogLikelihood": total_nll / max(1, count),
        "gradientSteps": len(grad_norms),
        "gradNorm": sum(grad_norms) / max(1, len(grad_norms)),
        "seconds": time.perf_counter() - started,
        "steps": trainer.steps,
    }


def _detached(output: SampleOutput) -> SampleOutput:
    """What `_mismatch` reads of an output, without its graph."""
    return SampleOutput(output.token_logprobs.detach(), None, output.logprob.detach(), None)


def _mismatch(samples: list[Sample], outputs: list[SampleOutput]) -> dict[str, float]:
    """|behaviour - trainer| per sample (sums) and per token, where the behaviour is known."""
    sample_gaps: list[float] = []
    token_gaps: list[float] = []
    for sample, output in zip(samples, outputs):
        if sample.behaviour is None:
            continue
        if sample.is_choice:
            gap = abs(float(sample.behaviour) - float(output.logprob.detach()))  # type: ignore[arg-type,union-attr]
            sample_gaps.append(gap)
            token_gaps.append(gap)
        else:
            trainer = [float(v) for v in output.token_logprobs.detach()]
            behaviour = sample.behaviour if isinstance(sample.behaviour, list) else None
            if behaviour is None:
                sample_gaps.append(abs(float(sample.behaviour) - sum(trainer)))  # type: ignore[arg-type]
                continue
            sample_gaps.append(abs(sum(behaviour) - sum(trainer)))
            token_gaps.extend(abs(b - t) for b, t in zip(behaviour, trainer))
    return {
        "behaviourMismatch": sum(sample_gaps) / len(sample_gaps) if sample_gaps else 0.0,
        "tokenMismatch": sum(token_gaps) / len(token_gaps) if token_gaps else 0.0,
        "maxTokenMismatch": max(token_gaps) if token_gaps else 0.0,
    }
