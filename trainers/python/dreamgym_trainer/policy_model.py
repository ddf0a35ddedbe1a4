"""The LLM policy's trainable weights: the GGUF loaded as fp32, fine-tuned in full or through
LoRA adapters (peft), with its AdamW optimiser and its frozen snapshots (the KL reference). What
the worker's requests do: scoring (`logprobs`), learning (`update`, `imitate`:
`policy_update.py`), snapshots, state (`save`, `load`: `trainer_state.py`) and GGUF export for
generation (`export`: `weight_export.py`). Samples are token ids (`samples.py`), evaluated by
packed forward passes (`packed_forward.py`).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from .gguf_io import load_gguf_model, scan_gguf
from .packed_forward import PackedForward
from .policy_update import behaviour_cloning, clipped_update
from .samples import parse_sample
from .trainer_options import TrainerOptions
from .trainer_state import file_fingerprint, load_peft_adapter, load_state, save_peft_adapter, save_state
from .weight_export import export_weights


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
        self.fingerprint = file_fingerprint(options.model)
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
        boundary = 0
        if options.mode == "lora" and options.lora_layers:
            boundary = min(options.lora_layers)
        self.packed = PackedForward(self.causal_lm, self.device, options, boundary)
        self.text = None  # the vocabulary's decoder, read on the first `generate`
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
            "frozenTrunkLayers": self.packed.boundary,
            **self.options.describe(),
        }

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
        outputs = self._with_weights(weights, lambda: self.packed.evaluate(samples))
        results = []
        for sample, output in zip(samples, outputs):
            entry: dict[str, Any] = {"logprob": float(output.logprob)}
            if sample.is_choice:
                entry["candidates"] = [float(v) for v in output.token_logprobs]
                entry["candidateTokens"] = [[float(v) for v in tokens] for tokens in output.candidate_tokens or []]
            else:
                entry["tokens"] = [float(v) for v in output.token_logprobs]
            results.append(entry)
        return {"results": results}

    def generate(self, params: dict) -> dict:
        """Samples continuations of `prompts` (token ids) on the current weights, batched, with
        each token's log-probability at the trainer's temperature (greedy: `temperature` 0, the
        raw distribution's). Stops at `stopTokens`, at `stop` texts, or after `maxTokens`."""
        from .sampling import generate
        from .token_text import TokenText

        prompts = params.get("prompts")
        if not isinstance(prompts, list) or not prompts or not all(isinstance(p, list) and p and all(isinstance(t, int) for t in p) for p in prompts):
            raise ValueError("generate needs `prompts`: non-empty lists of token ids")
        temperature = float(params.get("temperature", self.options.temperature))
        if temperature > 0 and abs(temperature - self.options.temperature) > 1e-9:
            raise ValueError(
                f"generate samples at the trainer's temperature {self.options.temperature} (its log-probabilities are scored there), got {temperature}"
            )
        if self.text is None:
            self.text = TokenText(self.source)
        stop_texts = [str(t) for t in params.get("stop", [])]
        was_training = self.causal_lm.training
        self.causal_lm.eval()
        try:
            generations = generate(
                self.causal_lm,
                self.device,
                prompts,
                max_new_tokens=int(params.get("maxTokens", 64)),
                stop_tokens={int(t) for t in params.get("stopTokens", [])},
                temperature=temperature,
                seed=params.get("seed"),
                stop_texts=stop_texts,
                decode=self.text.decode,
            )
        finally:
            self.causal_lm.train(was_training)
        return {
            "generations": [
                {"tokens": g.tokens, "logprobs": g.logprobs, "text": self.text.decode(g.tokens), "finish": g.finish}
                for g in generations
            ]
        }

    # ---------------------------------------------------------------- optimiser
    def set_learning_rate(self, learning_rate: float | None) -> None:
        """The request's learning rate, or the configured one."""
        rate = self.options.learning_rate if learning_rate is None else float(learning_rate)
        for group in self.optimizer.param_groups:
            group["lr"] = rate

    def step(self, max_grad_norm: float | None) -> float:
        """One AdamW step on the accumulated gradients (clipped); returns their norm."""
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
        """The clipped policy-gradient update (see `policy_update.clipped_update`)."""
        return clipped_update(self, raw_samples, schedule, loss_config, max_grad_norm, learning_rate)

    def imitate(
        self,
        raw_samples: list[dict],
        batches: list[list[int]],
        max_grad_norm: float | None,
        learning_rate: float | None,
    ) -> dict:
        """Behaviour cloning (see `policy_update.behaviour_cloning`)."""
        return behaviour_cloning(self, raw_samples, batches, max_grad_norm, learning_rate)

    # ---------------------------------------------------------------- state
    def save(self, directory: str, weights: str | None = None) -> dict:
        return save_state(self, directory, weights)

    def load(self, directory: str, weights: str | None = None) -> dict:
        return load_state(self, directory, weights)

    def load_adapter(self, directory: str) -> dict:
        """Loads a PEFT LoRA adapter folder into the current weights (see `load_peft_adapter`)."""
        return load_peft_adapter(self, directory)

    def save_adapter(self, directory: str) -> dict:
        """Writes the current LoRA weights as a PEFT adapter folder (fp16 safetensors)."""
        return save_peft_adapter(self, directory)

    def export(self, out_path: str, tensor_type: str) -> dict:
        """Writes the current weights for llama.cpp: `lora` (an adapter GGUF over the base; LoRA
        mode only) or a whole model (`f32`, `f16`, `q8_0`, `source`; LoRA merged in)."""
        return export_weights(
            self.causal_lm, self.peft_model is not None, self.options.lora_alpha, self.source, out_path, tensor_type
        )
