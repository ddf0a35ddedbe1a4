"""The LLM policy's trainable weights and their gradient steps: the GGUF loaded as fp32,
fine-tuned in full or through LoRA adapters (peft), scored on token ids the TypeScript side
sends (it tokenises with llama.cpp, the tokenizer generation used).

A sample is a prompt and one or more continuations:
- a *sequence* sample (`completion`): the policy wrote the continuation token by token;
  log pi = the sum of its tokens' log-probabilities (at the sampling temperature);
- a *choice* sample (`candidates`, `choice`): the policy chose one of several continuations
  by their likelihood; log pi = log softmax over the candidates' summed log-probabilities.

All continuations of a sample are packed into one row after a single copy of the prompt,
with an attention mask that lets each continuation see the prompt and itself only, and
position ids that restart after the prompt for each one: the prompt is evaluated once.
Log-probabilities are computed only where a continuation token is predicted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from .gguf_io import GgufFile, export_full_gguf, export_lora_gguf, load_gguf_model, scan_gguf
from .policy_loss import LossConfig, k3_kl, token_loss

STATE_FORMAT = "dreamgym-llm-policy-trainer"
STATE_VERSION = 1
DEFAULT_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class CheckpointMismatch(ValueError):
    """A saved state does not fit the running trainer (another model, mode or LoRA shape)."""


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


@dataclass
class TrainerOptions:
    model: str
    mode: str = "lora"
    lora_rank: int = 16
    lora_alpha: float = 32.0
    lora_dropout: float = 0.0
    lora_target_modules: tuple[str, ...] = DEFAULT_TARGET_MODULES
    lora_layers: list[int] | None = None
    lora_top_layers: int | None = None
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    temperature: float = 1.0
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    max_batch_tokens: int = 4096
    aggregation: str = "token-mean"
    trunk_cache_bytes: int = 1 << 30

    @staticmethod
    def from_json(value: dict) -> "TrainerOptions":
        lora = value.get("lora") or {}
        options = TrainerOptions(
            model=str(value["model"]),
            mode=str(value.get("mode", "lora")),
            lora_rank=int(lora.get("rank", 16)),
            lora_alpha=float(lora.get("alpha", 2 * int(lora.get("rank", 16)))),
            lora_dropout=float(lora.get("dropout", 0.0)),
            lora_target_modules=tuple(lora.get("targetModules", DEFAULT_TARGET_MODULES)),
            lora_layers=None if lora.get("layers") is None else [int(v) for v in lora["layers"]],
            lora_top_layers=None if lora.get("topLayers") is None else int(lora["topLayers"]),
            learning_rate=float(value.get("learningRate", 1e-4)),
            weight_decay=float(value.get("weightDecay", 0.0)),
            temperature=float(value.get("temperature", 1.0)),
            seed=int(value.get("seed", 0)),
            device=str(value.get("device", "cpu")),
            dtype=str(value.get("dtype", "float32")),
            max_batch_tokens=int(value.get("maxBatchTokens", 4096)),
            aggregation=str(value.get("aggregation", "token-mean")),
            trunk_cache_bytes=int(value.get("trunkCacheBytes", 1 << 30)),
        )
        if options.mode not in ("lora", "full"):
            raise ValueError(f"mode must be lora or full, got {options.mode!r}")
        if options.aggregation not in ("token-mean", "sequence-mean"):
            raise ValueError(f"aggregation must be token-mean or sequence-mean, got {options.aggregation!r}")
        if options.dtype not in ("float32", "bfloat16"):
            raise ValueError(f"dtype must be float32 or bfloat16, got {options.dtype!r}")
        if not options.temperature > 0:
            raise ValueError("temperature must be positive")
        return options

    def describe(self) -> dict:
        return {
            "mode": self.mode,
            "lora": None
            if self.mode != "lora"
            else {
                "rank": self.lora_rank,
                "alpha": self.lora_alpha,
                "dropout": self.lora_dropout,
                "targetModules": list(self.lora_target_modules),
                "layers": self.lora_layers,
            },
            "temperature": self.temperature,
            "dtype": self.dtype,
        }


def _file_fingerprint(path: str) -> dict:
    stat = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        # Head and tail: enough to tell models apart without hashing gigabytes each time.
        digest.update(handle.read(1 << 20))
        handle.seek(max(0, stat.st_size - (1 << 20)))
        digest.update(handle.read(1 << 20))
    return {"name": os.path.basename(path), "bytes": stat.st_size, "sha256HeadTail": digest.hexdigest()}


class PolicyTrainer:
    """Owns the model, its optimiser and its frozen snapshots."""

    def __init__(self, options: TrainerOptions, log: Callable[[str], None] = lambda _: None):
        started = time.perf_counter()
        self.options = options
        self.log = log
        self.device = torch.device(options.device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda was asked for, but torch sees no CUDA device")
        torch.manual_seed(options.seed)
        dtype = torch.float32 if options.dtype == "float32" else torch.bfloat16
        model, self.info = load_gguf_model(options.model, dtype=dtype, log=log)
        self.source = scan_gguf(options.model)
        self.fingerprint = _file_fingerprint(options.model)
        if options.mode == "lora" and options.lora_layers is None and options.lora_top_layers is not None:
            blocks = self.info.block_count
            if not 1 <= options.lora_top_layers <= blocks:
                raise ValueError(f"lora.topLayers must be in [1, {blocks}], got {options.lora_top_layers}")
            options.lora_layers = list(range(blocks - options.lora_top_layers, blocks))
        if options.mode == "lora" and options.lora_layers is not None:
            bad = [layer for layer in options.lora_layers if not 0 <= layer < self.info.block_count]
            if bad or not options.lora_layers:
                raise ValueError(f"lora.layers must be layers of the model's {self.info.block_count}, got {options.lora_layers}")
        if options.mode == "lora":
            from peft import LoraConfig, get_peft_model

            for parameter in model.parameters():
                parameter.requires_grad_(False)
            config = LoraConfig(
                r=options.lora_rank,
                lora_alpha=options.lora_alpha,
                lora_dropout=options.lora_dropout,
                target_modules=list(options.lora_target_modules),
                layers_to_transform=options.lora_layers,
                bias="none",
                task_type="CAUSAL_LM",
            )
            self.peft_model = get_peft_model(model, config)
            self.causal_lm = self.peft_model.get_base_model()
        else:
            self.peft_model = None
            self.causal_lm = model
        self.causal_lm.to(self.device)
        self.causal_lm.config.use_cache = False
        self.named_trainable = [(n, p) for n, p in self.causal_lm.named_parameters() if p.requires_grad]
        self.trainable = [p for _, p in self.named_trainable]
        self.optimizer = torch.optim.AdamW(
            self.trainable,
            lr=options.learning_rate,
            betas=options.betas,
            weight_decay=options.weight_decay,
        )
        self.steps = 0
        self.snapshots: dict[str, list[torch.Tensor]] = {}
        # LoRA on the top layers only: the layers below never change, so their output for a
        # given row of tokens is computed once and kept (the frozen trunk).
        self.boundary = 0
        if options.mode == "lora" and options.lora_layers:
            self.boundary = min(options.lora_layers)
        self.trunk_cache: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self.trunk_cache_bytes = 0
        self.trunk_hits = 0
        self.trunk_misses = 0
        self.load_seconds = time.perf_counter() - started

    # ---------------------------------------------------------------- description
    def describe(self) -> dict:
        return {
            "model": self.options.model,
            "architecture": self.info.architecture,
            "blocks": self.info.block_count,
            "vocabSize": self.info.vocab_size,
            "parameters": sum(p.numel() for p in self.causal_lm.parameters()),
            "trainableParameters": sum(p.numel() for p in self.trainable),
            "device": str(self.device),
            "threads": torch.get_num_threads(),
            "loadSeconds": self.load_seconds,
            "frozenTrunkLayers": self.boundary,
            **self.options.describe(),
        }

    # ---------------------------------------------------------------- forward
    def _micro_batches(self, samples: list[Sample], order: list[int]) -> Iterator[list[int]]:
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

    def _forward(self, samples: list[Sample], want_entropy: bool) -> list[SampleOutput]:
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
            with self._layers(self.boundary, None, final_norm=True) as inner:
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
                sums = torch.stack(
                    [
                        raw_logp[start : start + n].gather(1, target_tensor[start : start + n, None]).sum()
                        for start, n in sample_spans
                    ]
                )
                distribution = torch.log_softmax(sums, dim=0)
                entropy = -(distribution.exp() * distribution).sum() if want_entropy else None
                outputs.append(SampleOutput(sums, None, distribution[sample.choice], entropy))
            else:
                start, n = sample_spans[0]
                block = tempered_logp[start : start + n]
                token_logprobs = block.gather(1, target_tensor[start : start + n, None])[:, 0]
                token_entropy = -(block.exp() * block).sum(-1) if want_entropy else None
                outputs.append(SampleOutput(token_logprobs, token_entropy, token_logprobs.sum(), token_entropy))
        return outputs

    def _evaluate(self, samples: list[Sample], want_entropy: bool = False) -> list[SampleOutput]:
        results: list[SampleOutput | None] = [None] * len(samples)
        order = sorted(range(len(samples)), key=lambda i: samples[i].length)
        with torch.inference_mode():
            for batch in self._micro_batches(samples, order):
                for index, output in zip(batch, self._forward([samples[i] for i in batch], want_entropy)):
                    results[index] = output
        return results  # type: ignore[return-value]

    # ---------------------------------------------------------------- snapshots
    def _swap(self, name: str) -> None:
        stored = self.snapshots[name]
        for index, parameter in enumerate(self.trainable):
            current = parameter.data
            parameter.data = stored[index]
            stored[index] = current

    def snapshot(self, name: str) -> dict:
        self.snapshots[name] = [p.detach().clone() for p in self.trainable]
        return {"name": name, "tensors": len(self.trainable)}

    def release(self, name: str) -> dict:
        self.snapshots.pop(name, None)
        return {"released": name}

    def reset_optimizer(self) -> dict:
        """Forgets AdamW's moments: a new optimisation problem starts (RL after behaviour
        cloning), which must not be pushed on by the momentum of the previous one."""
        self.optimizer.state.clear()
        return {"reset": True}

    def _with_weights(self, weights: str | None, action: Callable[[], Any]) -> Any:
        if weights is None:
            return action()
        if weights not in self.snapshots:
            raise KeyError(f"no snapshot named {weights!r}")
        self._swap(weights)
        try:
            return action()
        finally:
            self._swap(weights)

    # ---------------------------------------------------------------- API
    def logprobs(self, raw_samples: list[dict], weights: str | None = None) -> dict:
        samples = [parse_sample(s, i) for i, s in enumerate(raw_samples)]
        outputs = self._with_weights(weights, lambda: self._evaluate(samples))
        results = []
        for sample, output in zip(samples, outputs):
            entry: dict[str, Any] = {"logprob": float(output.logprob)}
            if sample.is_choice:
                entry["candidates"] = [float(v) for v in output.token_logprobs]
            else:
                entry["tokens"] = [float(v) for v in output.token_logprobs]
            results.append(entry)
        return {"results": results}

    def _set_learning_rate(self, learning_rate: float | None) -> None:
        rate = self.options.learning_rate if learning_rate is None else float(learning_rate)
        for group in self.optimizer.param_groups:
            group["lr"] = rate

    def _step(self, max_grad_norm: float | None) -> float:
        norm = torch.nn.utils.clip_grad_norm_(
            self.trainable, max_grad_norm if max_grad_norm is not None else float("inf")
        )
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.steps += 1
        return float(norm)

    def update(
        self,
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
        self._set_learning_rate(learning_rate)
        for sample in samples:
            if config.kl_coefficient > 0 and sample.reference is None:
                raise ValueError("loss.klCoefficient > 0 needs `reference` on every sample")
        _check_schedule(schedule, len(samples))
        first_epoch = schedule[0] if schedule else []
        needs_pre_pass = any(s.behaviour is None for s in samples) or len(first_epoch) > 1
        mismatch: dict[str, float] | None = None
        if needs_pre_pass and samples:
            before = self._evaluate(samples)
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
                self.optimizer.zero_grad(set_to_none=True)
                units = sum(samples[i].units for i in mini_batch)
                normaliser = units if self.options.aggregation == "token-mean" else len(mini_batch)
                first_outputs: list[tuple[Sample, SampleOutput]] = []
                for micro in self._micro_batches(samples, mini_batch):
                    outputs = self._forward([samples[i] for i in micro], want_entropy)
                    micro_loss = torch.zeros((), device=self.device)
                    for index, output in zip(micro, outputs):
                        sample = samples[index]
                        terms = self._sample_loss(sample, output, config)
                        weight = 1.0 if self.options.aggregation == "token-mean" else 1.0 / sample.units
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
                            first_outputs.append((sample, output))
                    (micro_loss / normaliser).backward()
                if first_outputs:
                    mismatch = _mismatch([s for s, _ in first_outputs], [o for _, o in first_outputs])
                grad_norms.append(self._step(max_grad_norm))
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
            "steps": self.steps,
        }

    def _sample_loss(self, sample: Sample, output: SampleOutput, config: LossConfig):
        advantage = torch.tensor(sample.advantage, device=self.device)
        if sample.is_choice:
            logprob = output.logprob.reshape(1)
            behaviour = torch.tensor([float(sample.behaviour)], device=self.device)  # type: ignore[arg-type]
            reference = None if sample.reference is None else torch.tensor([float(sample.reference)], device=self.device)  # type: ignore[arg-type]
            entropy = None if output.entropy is None else output.entropy.reshape(1)
            return token_loss(logprob, behaviour, advantage, config, reference=reference, entropy=entropy)
        logprob = output.token_logprobs
        behaviour = torch.tensor(sample.behaviour, dtype=torch.float32, device=self.device)
        if isinstance(sample.reference, list):
            reference = torch.tensor(sample.reference, dtype=torch.float32, device=self.device)
            return token_loss(logprob, behaviour, advantage, config, reference=reference, entropy=output.token_entropy)
        without_kl = dataclasses.replace(config, kl_coefficient=0.0)
        terms = token_loss(logprob, behaviour, advantage, without_kl, entropy=output.token_entropy)
        if config.kl_coefficient > 0 and sample.reference is not None:
            # Only the sequence's reference log-probability is known: a sequence-level k3 term,
            # spread evenly over the sample's tokens.
            reference_sum = torch.tensor(float(sample.reference), device=self.device)
            sequence_kl = k3_kl(output.logprob, reference_sum)
            per_token = sequence_kl / len(logprob)
            terms.kl = per_token.expand_as(logprob)
            terms.loss = terms.loss + config.kl_coefficient * terms.kl
        return terms

    def imitate(
        self,
        raw_samples: list[dict],
        batches: list[list[int]],
        max_grad_norm: float | None,
        learning_rate: float | None,
    ) -> dict:
        """Behaviour cloning: for each mini-batch, one step on the negative log-likelihood of
        the demonstrated continuation (token mean for sequences, the choice's NLL for choices)."""
        started = time.perf_counter()
        samples = [parse_sample(s, i) for i, s in enumerate(raw_samples)]
        self._set_learning_rate(learning_rate)
        _check_schedule([batches], len(samples))
        total_nll = 0.0
        count = 0
        grad_norms = []
        for mini_batch in batches:
            if not mini_batch:
                continue
            self.optimizer.zero_grad(set_to_none=True)
            units = sum(samples[i].units for i in mini_batch)
            for micro in self._micro_batches(samples, mini_batch):
                outputs = self._forward([samples[i] for i in micro], False)
                loss = torch.zeros((), device=self.device)
                for index, output in zip(micro, outputs):
                    sample = samples[index]
                    negative = -(output.logprob if sample.is_choice else output.token_logprobs.sum())
                    loss = loss + negative
                    total_nll += float(negative.detach())
                    count += 1
                (loss / units).backward()
            grad_norms.append(self._step(max_grad_norm))
        return {
            "negativeLogLikelihood": total_nll / max(1, count),
            "gradientSteps": len(grad_norms),
            "gradNorm": sum(grad_norms) / max(1, len(grad_norms)),
            "seconds": time.perf_counter() - started,
            "steps": self.steps,
        }

    # ---------------------------------------------------------------- state
    def _header(self, frozen: bool) -> dict:
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "base": self.fingerprint,
            **self.options.describe(),
            "parameters": [[name, list(p.shape)] for name, p in self.named_trainable],
            "steps": self.steps,
            "frozen": frozen,
        }

    def save(self, directory: str, weights: str | None = None) -> dict:
        from safetensors.torch import save_file

        started = time.perf_counter()
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        tensors = self.snapshots[weights] if weights is not None else [p.detach() for p in self.trainable]
        save_file(
            {name: tensor.contiguous().cpu() for (name, _), tensor in zip(self.named_trainable, tensors)},
            str(path / "weights.safetensors"),
        )
        if weights is None:
            torch.save(
                {"optimizer": self.optimizer.state_dict(), "rng": torch.get_rng_state(), "steps": self.steps},
                path / "optimizer.pt",
            )
        (path / "trainer.json").write_text(json.dumps(self._header(weights is not None), indent=2) + "\n")
        return {"directory": str(path), "seconds": time.perf_counter() - started}

    def load(self, directory: str, weights: str | None = None) -> dict:
        from safetensors.torch import load_file

        started = time.perf_counter()
        path = Path(directory)
        header_file = path / "trainer.json"
        if not header_file.is_file():
            raise CheckpointMismatch(f"{header_file} is missing: {directory} holds no LLM policy state")
        try:
            header = json.loads(header_file.read_text())
        except json.JSONDecodeError as error:
            raise CheckpointMismatch(f"{header_file} is not valid JSON ({error})") from error
        expected = self._header(weights is not None)
        if header.get("format") != STATE_FORMAT or header.get("version") != STATE_VERSION:
            raise CheckpointMismatch(f"{header_file}: not a {STATE_FORMAT} v{STATE_VERSION} state")
        for key in ("mode", "lora", "parameters"):
            if header.get(key) != expected[key]:
                raise CheckpointMismatch(
                    f"{header_file}: saved with {key} {json.dumps(header.get(key))[:200]}, "
                    f"but this trainer has {json.dumps(expected[key])[:200]}"
                )
        base = header.get("base", {})
        if base.get("bytes") != self.fingerprint["bytes"] or base.get("sha256HeadTail") != self.fingerprint["sha256HeadTail"]:
            raise CheckpointMismatch(
                f"{header_file}: saved on base model {base.get('name')} ({base.get('bytes')} bytes), "
                f"but this trainer runs {self.fingerprint['name']} ({self.fingerprint['bytes']} bytes)"
            )
        try:
            stored = load_file(str(path / "weights.safetensors"))
        except Exception as error:  # safetensors raises its own error types on corrupt files
            raise CheckpointMismatch(f"{path / 'weights.safetensors'}: unreadable ({error})") from error
        tensors = []
        for name, parameter in self.named_trainable:
            if name not in stored or tuple(stored[name].shape) != tuple(parameter.shape):
                raise CheckpointMismatch(f"{path / 'weights.safetensors'}: tensor {name} is missing or has another shape")
            tensors.append(stored[name].to(self.device, parameter.dtype))
        if weights is not None:
            self.snapshots[weights] = tensors
        else:
            optimizer_file = path / "optimizer.pt"
            if not optimizer_file.is_file():
                raise CheckpointMismatch(f"{optimizer_file} is missing")
            state = torch.load(optimizer_file, map_location=self.device, weights_only=False)
            with torch.no_grad():
                for parameter, tensor in zip(self.trainable, tensors):
                    parameter.copy_(tensor)
            self.optimizer.load_state_dict(state["optimizer"])
            torch.set_rng_state(state["rng"])
            self.steps = int(state["steps"])
        return {"directory": str(path), "seconds": time.perf_counter() - started, "steps": self.steps}

    def export(self, out_path: str, tensor_type: str) -> dict:
        """Writes the current weights for llama.cpp: `lora` (an adapter GGUF over the base; LoRA
        mode only) or a whole model (`f32`, `f16`, `q8_0`, `source`; LoRA merged in)."""
        started = time.perf_counter()
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        if tensor_type == "lora":
            if self.peft_model is None:
                raise ValueError("export type lora needs mode lora; export a whole model (f16, f32, q8_0) instead")
            result = export_lora_gguf(self._lora_adapters(), self.options.lora_alpha, self.source, out_path)
        else:
            result = export_full_gguf(self._merged_weights(), self.source, out_path, tensor_type=tensor_type)
        result["seconds"] = time.perf_counter() - started
        result["kind"] = "lora" if tensor_type == "lora" else "model"
        return result

    def _lora_modules(self) -> Iterator[tuple[str, Any]]:
        for name, module in self.causal_lm.named_modules():
            lora_a = getattr(module, "lora_A", None)
            if lora_a is not None and "default" in lora_a:
                yield name, module

    def _lora_adapters(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        return {
            name: (module.lora_A["default"].weight, module.lora_B["default"].weight)
            for name, module in self._lora_modules()
        }

    def _merged_weights(self) -> dict[str, torch.Tensor]:
        if self.peft_model is None:
            return {name: p for name, p in self.causal_lm.named_parameters()}
        weights: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            for name, parameter in self.causal_lm.named_parameters():
                if ".lora_" in name:
                    continue
                weights[name.replace(".base_layer.", ".")] = parameter
            for name, module in self._lora_modules():
                delta = module.lora_B["default"].weight @ module.lora_A["default"].weight
                weights[f"{name}.weight"] = module.base_layer.weight + delta * module.scaling["default"]
        return weights


def _check_schedule(schedule: list[list[list[int]]], count: int) -> None:
    for epoch in schedule:
        for batch in epoch:
            for index in batch:
                if not isinstance(index, int) or not 0 <= index < count:
                    raise ValueError(f"mini-batch index {index!r} is outside the {count} samples")


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
