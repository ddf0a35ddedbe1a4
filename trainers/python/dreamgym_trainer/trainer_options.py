"""The trainer's options, as the worker's `start` request gives them."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


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
