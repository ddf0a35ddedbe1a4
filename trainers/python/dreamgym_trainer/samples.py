"""What the trainer is given to score and train on: samples of token ids (the TypeScript side
tokenises with llama.cpp, the tokenizer generation used), and what a forward pass gives back
for each.

A sample is a prompt and one or more continuations:
- a *sequence* sample (`completion`): the policy wrote the continuation token by token;
  log pi = the sum of its tokens' log-probabilities (at the sampling temperature);
- a *choice* sample (`candidates`, `choice`): the policy chose one of several continuations
  by their likelihood; log pi = log softmax over the candidates' summed log-probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Sample:
    prompt: list[int]
    continuations: list[list[int]]
    choice: int | None
    behaviour: list[float] | float | None
    reference: list[float] | float | None
    advantage: float

    @property
    def is_choice(self) -> bool:
        return self.choice is not None

    @property
    def units(self) -> int:
        """Loss terms the sample contributes: its tokens, or one choice."""
        return 1 if self.is_choice else len(self.continuations[0])

    @property
    def length(self) -> int:
        return len(self.prompt) + sum(len(c) for c in self.continuations)


def _ids(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{where} must be a list of token ids")
    return value


def parse_sample(value: dict, index: int) -> Sample:
    where = f"samples[{index}]"
    prompt = _ids(value.get("prompt"), f"{where}.prompt")
    if len(prompt) == 0:
        raise ValueError(f"{where}.prompt is empty")
    if "candidates" in value:
        candidates = [_ids(c, f"{where}.candidates[{j}]") for j, c in enumerate(value["candidates"])]
        if not candidates or any(len(c) == 0 for c in candidates):
            raise ValueError(f"{where}.candidates must be non-empty token lists")
        choice = value.get("choice", 0)
        if not isinstance(choice, int) or not 0 <= choice < len(candidates):
            raise ValueError(f"{where}.choice must index its candidates, got {choice!r}")
        continuations, picked = candidates, choice
    else:
        completion = _ids(value.get("completion"), f"{where}.completion")
        if len(completion) == 0:
            raise ValueError(f"{where}.completion is empty")
        continuations, picked = [completion], None
    behaviour = value.get("behaviour")
    if isinstance(behaviour, list) and picked is None and len(behaviour) != len(continuations[0]):
        raise ValueError(
            f"{where}.behaviour has {len(behaviour)} log-probabilities for {len(continuations[0])} completion tokens"
        )
    reference = value.get("reference")
    if isinstance(reference, list) and picked is None and len(reference) != len(continuations[0]):
        raise ValueError(f"{where}.reference has {len(reference)} values for {len(continuations[0])} tokens")
    return Sample(
        prompt=prompt,
        continuations=continuations,
        choice=picked,
        behaviour=behaviour,
        reference=reference,
        advantage=float(value.get("advantage", 0.0)),
    )


@dataclass
class SampleOutput:
    """What a forward pass gives for one sample."""

    # Sequence: per-token log-probs of the completion. Choice: summed log-prob per candidate.
    token_logprobs: torch.Tensor
    # Sequence: per-token entropies (when asked). Choice: unused.
    token_entropy: torch.Tensor | None
    # log pi of the sample (sequence: sum; choice: log softmax of the chosen candidate).
    logprob: torch.Tensor
    # Sequence: per-token; choice: the candidate distribution's entropy (a scalar tensor).
    entropy: torch.Tensor | None
    # Choice: each candidate's per-token log-probabilities (raw distribution). Sequence: None.
    candidate_tokens: list[torch.Tensor] | None = None


def check_schedule(schedule: list[list[list[int]]], count: int) -> None:
    """Raises ValueError unless every mini-batch index names one of the `count` samples."""
    for epoch in schedule:
        for batch in epoch:
            for index in batch:
                if not isinstance(index, int) or not 0 <= index < count:
                    raise ValueError(f"mini-batch index {index!r} is outside the {count} samples")
