"""Saving and loading the trainer's state: the trainable weights (safetensors), AdamW's state,
the RNG and the step count, under a header (`trainer.json`) that names the base model, the mode
and the LoRA shape, so a state is never loaded into a trainer it does not fit. A snapshot's
state is its weights alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .trainer_parts import TrainerParts

STATE_FORMAT = "dreamgym-llm-policy-trainer"
STATE_VERSION = 1


class CheckpointMismatch(ValueError):
    """A saved state does not fit the running trainer (another model, mode or LoRA shape)."""


def file_fingerprint(path: str) -> dict:
    stat = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        # Head and tail: enough to tell models apart without hashing gigabytes each time.
        digest.update(handle.read(1 << 20))
        handle.seek(max(0, stat.st_size - (1 << 20)))
        digest.update(handle.read(1 << 20))
    return {"name": os.path.basename(path), "bytes": stat.st_size, "sha256HeadTail": digest.hexdigest()}


def state_header(trainer: TrainerParts, frozen: bool) -> dict:
    """What a saved state records of the trainer, to refuse loading it into one it does not fit."""
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "base": trainer.fingerprint,
        **trainer.options.describe(),
        "parameters": [[name, list(p.shape)] for name, p in trainer.named_trainable],
        "steps": trainer.steps,
        "frozen": frozen,
    }


def save_state(trainer: TrainerParts, directory: str, weights: str | None = None) -> dict:
    """Saves the trainable weights and the optimiser (or the snapshot `weights` alone) with a header."""
    from safetensors.torch import save_file

    started = time.perf_counter()
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    tensors = trainer.snapshots[weights] if weights is not None else [p.detach() for p in trainer.trainable]
    save_file(
        {name: tensor.contiguous().cpu() for (name, _), tensor in zip(trainer.named_trainable, tensors)},
        str(path / "weights.safetensors"),
    )
    if weights is None:
        torch.save(
            {"optimizer": trainer.optimizer.state_dict(), "rng": torch.get_rng_state(), "steps": trainer.steps},
            path / "optimizer.pt",
        )
    (path / "trainer.json").write_text(json.dumps(state_header(trainer, weights is not None), indent=2) + "\n")
    return {"directory": str(path), "seconds": time.perf_counter() - started}


def load_state(trainer: TrainerParts, directory: str, weights: str | None = None) -> dict:
    """Loads a saved state into the trainable weights and the optimiser, or into the snapshot `weights`."""
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
    expected = state_header(trainer, weights is not None)
    if header.get("format") != STATE_FORMAT or header.get("version") != STATE_VERSION:
        raise CheckpointMismatch(f"{header_file}: not a {STATE_FORMAT} v{STATE_VERSION} state")
    for key in ("mode", "lora", "parameters"):
        if header.get(key) != expected[key]:
            raise CheckpointMismatch(
                f"{header_file}: saved with {key} {json.dumps(header.get(key))[:200]}, "
                f"but this trainer has {json.dumps(expected[key])[:200]}"
            )
    base = header.get("base", {})
    if base.get("bytes") != trainer.fingerprint["bytes"] or base.get("sha256HeadTail") != trainer.fingerprint["sha256HeadTail"]:
        raise CheckpointMismatch(
            f"{header_file}: saved on base model {base.get('name')} ({base.get('bytes')} bytes), "
            f"but this trainer runs {trainer.fingerprint['name']} ({trainer.fingerprint['bytes']} bytes)"
        )
    try:
        stored = load_file(str(path / "weights.safetensors"))
    except Exception as error:  # safetensors raises its own error types on corrupt files
        raise CheckpointMismatch(f"{path / 'weights.safetensors'}: unreadable ({error})") from error
    tensors = []
    for name, parameter in trainer.named_trainable:
        if name not in stored or tuple(stored[name].shape) != tuple(parameter.shape):
            raise CheckpointMismatch(f"{path / 'weights.safetensors'}: tensor {name} is missing or has another shape")
        tensors.append(stored[name].to(trainer.device, parameter.dtype))
    if weights is not None:
        trainer.snapshots[weights] = tensors
    else:
        optimizer_file = path / "optimizer.pt"
        if not optimizer_file.is_file():
            raise CheckpointMismatch(f"{optimizer_file} is missing")
        state = torch.load(optimizer_file, map_location=trainer.device, weights_only=False)
        with torch.no_grad():
            for parameter, tensor in zip(trainer.trainable, tensors):
                parameter.copy_(tensor)
        trainer.optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        trainer.steps = int(state["steps"])
    return {"directory": str(path), "seconds": time.perf_counter() - started, "steps": trainer.steps}


def load_peft_adapter(trainer: TrainerParts, directory: str) -> dict:
    """Loads a PEFT LoRA adapter (`adapter_config.json`, `adapter_model.safetensors`; what
    `behaviour_cloning` and `save_peft_adapter` write) into the trainer's LoRA weights. The
    adapter must have the trainer's rank, alpha, target modules and layers; the optimiser
    state is left as it is (a new problem starts: reset it if the momentum must not carry)."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    if trainer.peft_model is None:
        raise CheckpointMismatch("a LoRA adapter loads into a trainer in mode lora; this one fine-tunes in full")
    path = Path(directory)
    config_file, weights_file = path / "adapter_config.json", path / "adapter_model.safetensors"
    for file in (config_file, weights_file):
        if not file.is_file():
            raise CheckpointMismatch(f"{file} is missing: {directory} is not a PEFT adapter folder")
    config = json.loads(config_file.read_text())
    ours = trainer.peft_model.peft_config["default"]
    expected = {
        "r": ours.r,
        "lora_alpha": ours.lora_alpha,
        "target_modules": sorted(ours.target_modules),
        "layers_to_transform": ours.layers_to_transform,
    }
    found = {
        "r": config.get("r"),
        "lora_alpha": config.get("lora_alpha"),
        "target_modules": sorted(config.get("target_modules") or []),
        "layers_to_transform": config.get("layers_to_transform"),
    }
    if expected != found:
        raise CheckpointMismatch(f"{config_file} does not fit this trainer's LoRA: it has {found}, the trainer {expected}")
    tensors = load_file(str(weights_file))
    result = set_peft_model_state_dict(
        trainer.peft_model, {name: tensor.to(torch.float32) for name, tensor in tensors.items()}
    )
    unexpected = list(getattr(result, "unexpected_keys", []) or [])
    if unexpected:
        raise CheckpointMismatch(f"{weights_file} holds tensors this trainer has no place for: {unexpected[:3]}")
    for parameter in trainer.trainable:
        parameter.data = parameter.data.to(trainer.device)
    return {"directory": str(path), "tensors": len(tensors)}


def save_peft_adapter(trainer: TrainerParts, directory: str) -> dict:
    """Writes the LoRA weights as a PEFT adapter folder in fp16: `adapter_config.json` and
    `adapter_model.safetensors` (what vLLM's and SGLang's `/v1/load_lora_adapter` load, and
    `load_peft_adapter` reads back) and, beside them, `adapter.gguf` (the same adapter for
    llama.cpp: `dreamgym model serve` and the in-process runtime)."""
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    from .gguf_io import export_lora_gguf
    from .weight_export import lora_adapters

    if trainer.peft_model is None:
        raise ValueError("a PEFT adapter needs mode lora; export a whole model instead")
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    state = get_peft_model_state_dict(trainer.peft_model)
    save_file(
        {name: tensor.detach().to("cpu", torch.float16).contiguous() for name, tensor in state.items()},
        str(path / "adapter_model.safetensors"),
    )
    trainer.peft_model.peft_config["default"].save_pretrained(str(path))
    export_lora_gguf(
        lora_adapters(trainer.causal_lm), trainer.options.lora_alpha, trainer.source, str(path / "adapter.gguf"), "f16"
    )
    return {"path": str(path), "bytes": sum(file.stat().st_size for file in path.iterdir())}
