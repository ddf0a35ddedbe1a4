"""The trainer's forward pass over samples, packed: all continuations of a sample go into one
row after a single copy of the prompt, with an attention mask that lets each continuation see
the prompt and itself only, and position ids that restart after the prompt for each one: the
prompt is evaluated once. Log-probabilities are computed only where a continuation token is
predicted.

With LoRA on the top layers only, the layers below never change, so their output for a given
row of tokens is computed once and kept (the frozen trunk cache).

A differentiable forward whose attention would keep more than `RECOMPUTE_ABOVE_BYTES` for the
backward pass recomputes each decoder layer in the backward instead (activation
checkpointing): attention memory grows with the square of a row's length (two 1,000-token
rows, one forward and backward on the CPU: 5.8 GB kept, 3.6 GB recomputed).
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator

import torch
import torch.utils.checkpoint

from .samples import Sample, SampleOutput
from .trainer_options import TrainerOptions

# Attention probabilities (rows x heads x width^2 x 4 bytes x layers) above which the layers
# are recomputed in the backward pass; below it the forward keeps them, which is faster.
RECOMPUTE_ABOVE_BYTES = 2 << 30


class _Recomputed(torch.nn.Module):
    """A decoder layer whose activations are recomputed in the backward pass, not kept."""

    def __init__(self, layer: torch.nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return torch.utils.checkpoint.checkpoint(self.layer, *args, use_reentrant=False, **kwargs)


class PackedForward:
    """Forward passes of one causal LM; `boundary`: the first trainable layer (0: no frozen trunk)."""

    def __init__(self, causal_lm: Any, device: torch.device, options: TrainerOptions, boundary: int):
        self.causal_lm = causal_lm
        self.device = device
        self.options = options
        self.boundary = boundary
        self.trunk_cache: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self.trunk_cache_bytes = 0
        self.trunk_hits = 0
        self.trunk_misses = 0

    def micro_batches(self, samples: list[Sample], order: list[int]) -> Iterator[list[int]]:
        budget = self.options.max_batch_tokens
        batch: list[int] = []
        longest = 0
        for index in order:
            length = samples[index].length
            if batch and max(longest, length) * (len(batch) + 1) > budget:
                yield batch
                batch, longest = [], 0
            batch.append(index)
            longest = max(longest, length)
        if batch:
            yield batch

    def _layout(self, sample: Sample) -> tuple[list[int], torch.Tensor, torch.Tensor, list[tuple[int, int]]]:
        """A sample's packed row: token ids, position ids, the allowed-attention matrix, and
        (first predicting position, length) of each continuation."""
        row = sample.prompt + [t for c in sample.continuations for t in c]
        length = len(row)
        prompt_length = len(sample.prompt)
        positions = torch.empty(length, dtype=torch.long)
        positions[:prompt_length] = torch.arange(prompt_length)
        allowed = torch.zeros((length, length), dtype=torch.bool)
        allowed[:prompt_length, :prompt_length] = torch.ones(prompt_length, prompt_length, dtype=torch.bool).tril()
        spans = []
        start = prompt_length
        for continuation in sample.continuations:
            n = len(continuation)
            positions[start : start + n] = torch.arange(prompt_length, prompt_length + n)
            allowed[start : start + n, :prompt_length] = True
            allowed[start : start + n, start : start + n] = torch.ones(n, n, dtype=torch.bool).tril()
            spans.append((start, n))
            start += n
        return row, positions, allowed, spans

    def _mask(self, allowed: torch.Tensor) -> torch.Tensor:
        dtype = next(self.causal_lm.parameters()).dtype
        mask = torch.zeros((allowed.shape[0], 1, *allowed.shape[1:]), dtype=dtype)
        mask.masked_fill_(~allowed[:, None], torch.finfo(dtype).min)
        return mask.to(self.device)

    @contextmanager
    def _layers(self, start: int, end: int | None, final_norm: bool):
        """Runs the model's forward over layers [start, end) only (and its final norm or not)."""
        inner = self.causal_lm.model
        layers, norm = inner.layers, inner.norm
        inner.layers = torch.nn.ModuleList(list(layers)[start:end])
        if not final_norm:
            inner.norm = torch.nn.Identity()
        try:
            yield inner
        finally:
            inner.layers, inner.norm = layers, norm

    @contextmanager
    def _recomputed(self, inner: Any, rows: int, width: int):
        """Recomputes `inner`'s layers in the backward pass where keeping their attention
        would take more than `RECOMPUTE_ABOVE_BYTES` (nothing changes otherwise)."""
        layers = inner.layers
        heads = self.causal_lm.config.num_attention_heads
        kept = rows * heads * width * width * 4 * len(layers)
        if not torch.is_grad_enabled() or kept <= RECOMPUTE_ABOVE_BYTES:
            yield
            return
        inner.layers = torch.nn.ModuleList([_Recomputed(layer) for layer in layers])
        try:
            yield
        finally:
            inner.layers = layers

    def _trunks(self, layouts: list[tuple[list[int], torch.Tensor, torch.Tensor, Any]]) -> list[torch.Tensor]:
        """Hidden states entering the first trainable layer for each row: from the cache, the
        rows not there computed together (one padded batch, no gradient) and cached."""
        keys = [
            torch.tensor(row, dtype=torch.int32).numpy().tobytes() + positions.numpy().astype("int32").tobytes()
            for row, positions, _, _ in layouts
        ]
        found: dict[bytes, torch.Tensor] = {}
        missing: list[int] = []
        for index, key in enumerate(keys):
            cached = self.trunk_cache.get(key)
            if cached is not None:
                self.trunk_cache.move_to_end(key)
                found[key] = cached
            elif key not in found and index not in missing and keys.index(key) == index:
                missing.append(index)
        self.trunk_hits += len(keys) - len(missing)
        self.trunk_misses += len(missing)
        if missing:
            width = max(len(layouts[i][0]) for i in missing)
            input_ids = torch.zeros((len(missing), width), dtype=torch.long)
            position_ids = torch.zeros((len(missing), width), dtype=torch.long)
            allowed = torch.zeros((len(missing), width, width), dtype=torch.bool)
            for slot, index in enumerate(missing):
                row, positions, row_allowed, _ = layouts[index]
                length = len(row)
                input_ids[slot, :length] = torch.tensor(row, dtype=torch.long)
                position_ids[slot, :length] = positions
                allowed[slot, :length, :length] = row_allowed
                for padded in range(length, width):
                    allowed[slot, padded, padded] = True
            with torch.inference_mode(), self._layers(0, self.boundary, final_norm=False) as inner:
                hidden = inner(
                    input_ids=input_ids.to(self.device),
                    attention_mask=self._mask(allowed),
                    position_ids=position_ids.to(self.device),
                    use_cache=False,
                ).last_hidden_state
            for slot, index in enumerate(missing):
                value = hidden[slot, : len(layouts[index][0])].clone()
                found[keys[index]] = value
                self._cache_trunk(keys[index], value)
        return [found[key] for key in keys]

    def _cache_trunk(self, key: bytes, value: torch.Tensor) -> None:
        size = value.numel() * value.element_size()
        if size > self.options.trunk_cache_bytes:
            return
        self.trunk_cache[key] = value
        self.trunk_cache_bytes += size
        while self.trunk_cache_bytes > self.options.trunk_cache_bytes:
            _, evicted = self.trunk_cache.popitem(last=False)
            self.trunk_cache_bytes -= evicted.numel() * evicted.element_size()

    def forward(self, samples: list[Sample], want_entropy: bool) -> list[SampleOutput]:
        """Packed forward of `samples` (one row each); differentiable when grad is enabled."""
        layouts = [self._layout(sample) for sample in samples]
        width = max(len(row) for row, _, _, _ in layouts)
        position_ids = torch.zeros((len(samples), width), dtype=torch.long)
        allowed = torch.zeros((len(samples), width, width), dtype=torch.bool)
        input_ids = torch.zeros((len(samples), width), dtype=torch.long)
        gather_rows: list[int] = []
        gather_positions: list[int] = []
        targets: list[int] = []
        spans: list[list[tuple[int, int]]] = []  # per sample: (start in gathered, length) per continuation
        for row_index, (sample, (row, positions, row_allowed, row_spans)) in enumerate(zip(samples, layouts)):
            length = len(row)
            input_ids[row_index, :length] = torch.tensor(row, dtype=torch.long)
            position_ids[row_index, :length] = positions
            allowed[row_index, :length, :length] = row_allowed
            for padded in range(length, width):
                allowed[row_index, padded, padded] = True
            sample_spans = []
            prompt_length = len(sample.prompt)
            for (start, n), continuation in zip(row_spans, sample.continuations):
                # Token j of a continuation is predicted at the position before it.
                predictors = [prompt_length - 1] + list(range(start, start + n - 1))
                sample_spans.append((len(gather_positions), n))
                gather_rows.extend([row_index] * n)
                gather_positions.extend(predictors)
                targets.extend(continuation)
            spans.append(sample_spans)
        mask = self._mask(allowed)
        if self.boundary == 0:
            with self._recomputed(self.causal_lm.model, len(samples), width):
                hidden = self.causal_lm.model(
                    input_ids=input_ids.to(self.device),
                    attention_mask=mask,
                    position_ids=position_ids.to(self.device),
                    use_cache=False,
                ).last_hidden_state
        else:
            trunks = self._trunks(layouts)
            embeds = torch.zeros((len(samples), width, trunks[0].shape[-1]), dtype=trunks[0].dtype, device=self.device)
            for row_index, trunk in enumerate(trunks):
                embeds[row_index, : trunk.shape[0]] = trunk
            with (
                self._layers(self.boundary, None, final_norm=True) as inner,
                self._recomputed(inner, len(samples), width),
            ):
                hidden = inner(
                    inputs_embeds=embeds,
                    attention_mask=mask,
                    position_ids=position_ids.to(self.device),
                    use_cache=False,
                ).last_hidden_state
        picked = hidden[torch.tensor(gather_rows, device=self.device), torch.tensor(gather_positions, device=self.device)]
        logits = self.causal_lm.lm_head(picked).float()
        target_tensor = torch.tensor(targets, device=self.device)
        outputs: list[SampleOutput] = []
        raw_logp = None
        tempered_logp = None
        if any(not s.is_choice for s in samples):
            tempered_logp = torch.log_softmax(logits / self.options.temperature, dim=-1)
        if any(s.is_choice for s in samples):
            raw_logp = (
                tempered_logp
                if tempered_logp is not None and self.options.temperature == 1.0
                else torch.log_softmax(logits, dim=-1)
            )
        for sample, sample_spans in zip(samples, spans):
            if sample.is_choice:
                per_token = [
                    raw_logp[start : start + n].gather(1, target_tensor[start : start + n, None])[:, 0]
                    for start, n in sample_spans
                ]
                sums = torch.stack([tokens.sum() for tokens in per_token])
                distribution = torch.log_softmax(sums, dim=0)
                entropy = -(distribution.exp() * distribution).sum() if want_entropy else None
                outputs.append(SampleOutput(sums, None, distribution[sample.choice], entropy, per_token))
            else:
                start, n = sample_spans[0]
                block = tempered_logp[start : start + n]
                token_logprobs = block.gather(1, target_tensor[start : start + n, None])[:, 0]
                token_entropy = -(block.exp() * block).sum(-1) if want_entropy else None
                outputs.append(SampleOutput(token_logprobs, token_entropy, token_logprobs.sum(), token_entropy))
        return outputs

    def evaluate(self, samples: list[Sample], want_entropy: bool = False) -> list[SampleOutput]:
        results: list[SampleOutput | None] = [None] * len(samples)
        order = sorted(range(len(samples)), key=lambda i: samples[i].length)
        with torch.inference_mode():
            for batch in self.micro_batches(samples, order):
                for index, output in zip(batch, self.forward([samples[i] for i in batch], want_entropy)):
                    results[index] = output
        return results  # type: ignore[return-value]


def answer_logprobs(
    causal_lm: Any,
    device: torch.device,
    rows: list[tuple[list[int], list[int]]],
    autocast: torch.dtype | None = None,
) -> list[torch.Tensor]:
    """Per-token log-probabilities of each row's answer after its prompt, for rows of one
    continuation each (behaviour cloning, sequence samples): the rows are right-padded into
    one batch under the model's plain causal mask (padding comes after every real token, so no
    real token sees it), and only the answer positions reach the LM head. Differentiable when
    grad is enabled. `autocast`: a lower-precision compute type on CUDA (weights stay fp32)."""
    width = max(len(prompt) + len(answer) for prompt, answer in rows)
    input_ids = torch.zeros((len(rows), width), dtype=torch.long)
    gather_rows: list[int] = []
    gather_positions: list[int] = []
    targets: list[int] = []
    for row_index, (prompt, answer) in enumerate(rows):
        input_ids[row_index, : len(prompt) + len(answer)] = torch.tensor(prompt + answer, dtype=torch.long)
        # Answer token j is predicted at the position before it.
        gather_rows.extend([row_index] * len(answer))
        gather_positions.extend(range(len(prompt) - 1, len(prompt) + len(answer) - 1))
        targets.extend(answer)
    use_autocast = autocast is not None and device.type == "cuda"
    with torch.autocast(device.type, dtype=autocast, enabled=use_autocast):
        hidden = causal_lm.model(input_ids=input_ids.to(device), use_cache=False).last_hidden_state
        picked = hidden[torch.tensor(gather_rows, device=device), torch.tensor(gather_positions, device=device)]
        logits = causal_lm.lm_head(picked)
    logp = torch.log_softmax(logits.float(), dim=-1)
    chosen = logp.gather(1, torch.tensor(targets, device=device)[:, None])[:, 0]
    return list(torch.split(chosen, [len(answer) for _, answer in rows]))
