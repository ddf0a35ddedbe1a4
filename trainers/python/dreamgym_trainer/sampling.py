"""Batched generation in torch, with the log-probability of every sampled token: the trainer
can act as well as learn, so one GPU runs rollouts and updates without an inference server.

Prompts are token ids (the runtime's tokenisation, as everywhere in the trainer); they are
left-padded into one batch and decoded together with the model's key-value cache. Sampling is
greedy (`temperature == 0`) or from softmax(logits / temperature); the log-probability kept for
a token is the one of the distribution it was drawn from (the raw softmax for greedy
decoding), which is what an importance ratio against the trainer's own forward pass needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Generation:
    """One prompt's continuation: its tokens (the stop token included when it was reached),
    their log-probabilities, and why it ended (`stop` or `length`)."""

    tokens: list[int]
    logprobs: list[float]
    finish: str


@torch.inference_mode()
def generate(
    causal_lm: Any,
    device: torch.device,
    prompts: list[list[int]],
    *,
    max_new_tokens: int,
    stop_tokens: set[int],
    temperature: float = 0.0,
    pad_token: int = 0,
    seed: int | None = None,
    autocast: torch.dtype | None = None,
    stop_texts: list[str] | None = None,
    decode: Any = None,
) -> list[Generation]:
    """Continues every prompt until a stop token, a stop text (`stop_texts`, read through
    `decode`, token ids -> text; the text stops after it) or `max_new_tokens`."""
    if stop_texts and decode is None:
        raise ValueError("stop_texts needs decode")
    if not prompts or any(len(prompt) == 0 for prompt in prompts):
        raise ValueError("generate needs non-empty prompts")
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be at least 1")
    generator = None
    if temperature > 0:
        generator = torch.Generator(device=device)
        generator.manual_seed(0 if seed is None else seed)
    count = len(prompts)
    width = max(len(prompt) for prompt in prompts)
    input_ids = torch.full((count, width), pad_token, dtype=torch.long)
    attention = torch.zeros((count, width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        attention[row, width - len(prompt) :] = 1
    input_ids = input_ids.to(device)
    attention = attention.to(device)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    tokens: list[list[int]] = [[] for _ in prompts]
    logprobs: list[list[float]] = [[] for _ in prompts]
    finished = torch.zeros(count, dtype=torch.bool, device=device)
    stops = torch.tensor(sorted(stop_tokens), dtype=torch.long, device=device)
    stopped_by_text = [False] * count
    cache = None
    step_ids, step_positions = input_ids, positions
    use_autocast = autocast is not None and device.type == "cuda"
    for _ in range(max_new_tokens):
        with torch.autocast(device.type, dtype=autocast, enabled=use_autocast):
            output = causal_lm(
                input_ids=step_ids,
                attention_mask=attention,
                position_ids=step_positions,
                past_key_values=cache,
                use_cache=True,
            )
        cache = output.past_key_values
        logits = output.logits[:, -1].float()
        if temperature > 0:
            distribution = torch.log_softmax(logits / temperature, dim=-1)
            chosen = torch.multinomial(distribution.exp(), 1, generator=generator)[:, 0]
        else:
            distribution = torch.log_softmax(logits, dim=-1)
            chosen = distribution.argmax(-1)
        chosen_logprobs = distribution.gather(1, chosen[:, None])[:, 0]
        chosen = torch.where(finished, torch.full_like(chosen, pad_token), chosen)
        for row, (token, logprob, done) in enumerate(
            zip(chosen.tolist(), chosen_logprobs.tolist(), finished.tolist())
        ):
            if not done:
                tokens[row].append(token)
                logprobs[row].append(logprob)
        finished = finished | torch.isin(chosen, stops)
        if stop_texts:
            for row in range(count):
                if not bool(finished[row]) and any(text in decode(tokens[row]) for text in stop_texts):
                    stopped_by_text[row] = True
            finished = finished | torch.tensor(stopped_by_text, device=device)
        if bool(finished.all()):
            break
        # Finished rows decode padding, which nothing reads; every new position is attended.
        attention = torch.cat([attention, torch.ones((count, 1), dtype=torch.long, device=device)], dim=1)
        step_positions = step_positions[:, -1:] + 1
        step_ids = chosen[:, None]
    return [
        Generation(
            tokens=row_tokens,
            logprobs=row_logprobs,
            finish="stop" if by_text or (row_tokens and row_tokens[-1] in stop_tokens) else "length",
        )
        for row_tokens, row_logprobs, by_text in zip(tokens, logprobs, stopped_by_text)
    ]
