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
    from .policy_model import PolicyTrainer

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


def state_header(trainer: PolicyTrainer, frozen: bool) -> dict:
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


def save_state(trainer: PolicyTrainer, directory: str, weights: str | None = None) -> dict:
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


def load_state(trainer: PolicyTrainer, directory: str, weights: str | None = None) -> dict:
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
