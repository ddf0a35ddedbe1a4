"""The trainer's weights back to llama.cpp: a LoRA adapter GGUF over the base model (LoRA mode
only), or the whole model with the adapters merged in (`f32`, `f16`, `q8_0`, or the base GGUF's
own tensor types, `source`). Generation reloads what this writes after every update.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import torch

from .gguf_io import GgufFile, export_full_gguf, export_lora_gguf


def export_weights(
    causal_lm: Any,
    lora: bool,
    lora_alpha: float,
    source: GgufFile,
    out_path: str,
    tensor_type: str,
) -> dict:
    """Writes `causal_lm`'s current weights to `out_path` as `tensor_type` (`lora`, or a whole
    model's type); `lora`: whether the model carries peft LoRA adapters."""
    started = time.perf_counter()
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    if tensor_type == "lora":
        if not lora:
            raise ValueError("export type lora needs mode lora; export a whole model (f16, f32, q8_0) instead")
        result = export_lora_gguf(lora_adapters(causal_lm), lora_alpha, source, out_path)
    else:
        result = export_full_gguf(_merged_weights(causal_lm, lora), source, out_path, tensor_type=tensor_type)
    result["seconds"] = time.perf_counter() - started
    result["kind"] = "lora" if tensor_type == "lora" else "model"
    return result


def _lora_modules(causal_lm: Any) -> Iterator[tuple[str, Any]]:
    for name, module in causal_lm.named_modules():
        lora_a = getattr(module, "lora_A", None)
        if lora_a is not None and "default" in lora_a:
            yield name, module


def lora_adapters(causal_lm: Any) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Each LoRA-wrapped module's (lora_A, lora_B) weights, by module name."""
    return {
        name: (module.lora_A["default"].weight, module.lora_B["default"].weight)
        for name, module in _lora_modules(causal_lm)
    }


def _merged_weights(causal_lm: Any, lora: bool) -> dict[str, torch.Tensor]:
    if not lora:
        return {name: p for name, p in causal_lm.named_parameters()}
    weights: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for name, parameter in causal_lm.named_parameters():
            if ".lora_" in name:
                continue
            weights[name.replace(".base_layer.", ".")] = parameter
        for name, module in _lora_modules(causal_lm):
            delta = module.lora_B["default"].weight @ module.lora_A["default"].weight
            weights[f"{name}.weight"] = module.base_layer.weight + delta * module.scaling["default"]
    return weights
