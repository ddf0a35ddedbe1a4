"""Experience-model SFT: fine-tunes a GGUF chat model (SmolLM2-135M-Instruct by default) on the
experience-model SFT set that `dreamgym annotate` writes, and writes a GGUF the runtime
(`@dreamgym/llama`) loads.

Each example is the experience model's own prompt (ChatML, exactly as the runtime renders it)
and, as the answer, the JSON with the reasoning R* first and the next state after it. The loss
is the token cross-entropy of the answer (and its end-of-turn token) only, which is the paper's
`-log P(R* | s, a, H, D) - log P(s' | s, a, R*, H, D)`.

Pipeline: torch + transformers load the GGUF as fp32 weights; training is a plain AdamW loop
(warm-up, linear decay, gradient clipping and accumulation); the gguf quantizer transformers
attaches on load is detached so `save_pretrained` writes plain weights; llama.cpp's converter
(from the llama-cpp-python sdist, see gguf_converter.py) writes the result as a q8_0 GGUF.

    .venv/bin/python trainers/python/experience_sft.py --data runs/annotate/sft.jsonl \\
        --out runs/sft --device cpu --max-examples 64 --epochs 1

Outputs in --out: `model.<outtype>.gguf`, `metrics.json` (losses before and after on held-out
examples, the training curve, timings, sizes), and `hf/` (the Hugging Face weights, unless
--no-keep-hf). Progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from pathlib import Path

# OpenMP threads that spin while waiting slow everything down on a shared, busy CPU.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

SCRIPT_DIRECTORY = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPT_DIRECTORY))

from dreamgym_trainer.model_path import default_model_path  # noqa: E402
from gguf_converter import convert_to_gguf, ensure_converter  # noqa: E402

DEFAULT_MODEL = default_model_path()
# The system prompt SmolLM2's template adds to conversations without one (the runtime does too).
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


class SftError(RuntimeError):
    """Bad input data or settings."""


def log(message: str) -> None:
    print(f"[experience-sft] {message}", file=sys.stderr, flush=True)


def load_examples(path: Path, limit: int | None) -> list[dict]:
    """The chat examples of an SFT JSONL file; errors name the line."""
    if not path.is_file():
        raise SftError(f"{path} does not exist: write it with `dreamgym annotate --out DIR` (DIR/sft.jsonl).")
    examples = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise SftError(f"{path}:{number}: invalid JSON ({error})") from error
            messages = record.get("messages")
            if (
                not isinstance(messages, list)
                or len(messages) < 2
                or messages[-1].get("role") != "assistant"
                or any(not isinstance(m.get("content"), str) or m.get("role") not in ("system", "user", "assistant") for m in messages)
            ):
                raise SftError(f"{path}:{number}: `messages` must be chat messages ending with the assistant's answer")
            examples.append({"messages": messages, "key": (record.get("meta") or {}).get("key") or f"line-{number}"})
            if limit is not None and len(examples) >= limit:
                break
    if not examples:
        raise SftError(f"{path} holds no examples")
    return examples


def chatml_prompt(messages: list[dict], default_system: str | None) -> str:
    """The ChatML prompt of `messages`, ending where the assistant's answer starts."""
    parts = []
    if default_system is not None and messages[0]["role"] != "system":
        parts.append(f"<|im_start|>system\n{default_system}<|im_end|>\n")
    for message in messages:
        parts.append(f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def encode(tokenizer, example: dict, max_length: int, default_system: str | None):
    """Token ids and labels (-100 outside the answer); None when longer than max_length."""
    prompt = chatml_prompt(example["messages"][:-1], default_system)
    answer = example["messages"][-1]["content"] + "<|im_end|>"
    prompt_ids = tokenizer(prompt, add_special_tokens=False).input_ids
    answer_ids = tokenizer(answer, add_special_tokens=False).input_ids
    if len(prompt_ids) + len(answer_ids) > max_length:
        return None
    return prompt_ids + answer_ids, [-100] * len(prompt_ids) + answer_ids


def is_held_out(key: str, fraction: float) -> bool:
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < fraction


def collate(batch, pad_id: int, torch):
    width = max(len(ids) for ids, _ in batch)
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    for row, (ids, target) in enumerate(batch):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, : len(target)] = torch.tensor(target)
        attention[row, : len(ids)] = 1
    return input_ids, labels, attention


def answer_loss(model, batch, pad_id, device, torch):
    """Summed cross-entropy of the answer tokens, and their count. The output layer runs on
    the answer positions only: the prompt needs no logits, and on a small model with a large
    vocabulary that layer is a fifth of the compute."""
    input_ids, labels, attention = (tensor.to(device) for tensor in collate(batch, pad_id, torch))
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention).last_hidden_state
    targets = labels[:, 1:]
    mask = targets != -100
    logits = model.get_output_embeddings()(hidden[:, :-1, :][mask])
    loss = torch.nn.functional.cross_entropy(logits.float(), targets[mask], reduction="sum")
    return loss, int(mask.sum())


def mean_loss(model, encoded, batch_size, pad_id, device, torch) -> float | None:
    if not encoded:
        return None
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(encoded), batch_size):
            loss, tokens = answer_loss(model, encoded[start : start + batch_size], pad_id, device, torch)
            total += float(loss)
            count += tokens
    return total / max(1, count)


def detach_gguf_quantizer(model) -> None:
    """transformers marks a model loaded from GGUF as quantized; unmark it so it saves plain weights."""
    model.hf_quantizer = None
    if hasattr(model, "is_quantized"):
        try:
            model.is_quantized = False
        except AttributeError:
            pass
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    for attribute in ("quantization_method", "_pre_quantization_dtype"):
        if hasattr(model.config, attribute):
            delattr(model.config, attribute)


def resolve_device(name: str, torch) -> str:
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise SftError(f"--device {name}: no CUDA device is available (torch {torch.__version__}).")
    return name


def run(args: argparse.Namespace) -> dict:
    started = time.perf_counter()
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device, torch)
    base = Path(args.base_gguf).expanduser().resolve()
    if not base.is_file():
        raise SftError(f"--base-gguf {base} does not exist: run `dreamgym model pull smollm2-135m-instruct`.")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    converter = None if args.no_gguf else ensure_converter(log=log)

    examples = load_examples(Path(args.data), args.max_examples)
    log(f"loading {base.name} as fp32 weights on {device}")
    tokenizer = AutoTokenizer.from_pretrained(base.parent, gguf_file=base.name)
    model = AutoModelForCausalLM.from_pretrained(base.parent, gguf_file=base.name, dtype=torch.float32)
    model.to(device)
    loaded = time.perf_counter()
    default_system = SMOLLM2_SYSTEM if "smollm" in base.name.lower() else None
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    train, held_out, dropped = [], [], 0
    for example in examples:
        encoded = encode(tokenizer, example, args.max_length, default_system)
        if encoded is None:
            dropped += 1
            continue
        (held_out if is_held_out(example["key"], args.eval_fraction) else train).append(encoded)
    if not train:
        raise SftError(
            f"no training example fits --max-length {args.max_length} ({dropped} dropped, {len(held_out)} held out)"
        )
    log(f"{len(train)} training and {len(held_out)} held-out examples ({dropped} longer than {args.max_length} tokens dropped)")
    eval_before = mean_loss(model, held_out, args.batch_size, pad_id, device, torch)

    steps_per_epoch = math.ceil(len(train) / (args.batch_size * args.grad_accum))
    total_steps = args.max_steps or steps_per_epoch * args.epochs
    warmup = max(1, int(total_steps * args.warmup))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    def schedule(index: int) -> float:
        if index < warmup:
            return (index + 1) / warmup
        return max(0.0, (total_steps - index) / max(1, total_steps - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    curve = []
    step = 0
    trained_tokens = 0
    model.train()
    order = list(range(len(train)))
    generator = random.Random(args.seed)
    train_started = time.perf_counter()
    while step < total_steps:
        generator.shuffle(order)
        for start in range(0, len(order), args.batch_size * args.grad_accum):
            if step >= total_steps:
                break
            optimizer.zero_grad(set_to_none=True)
            group = [train[index] for index in order[start : start + args.batch_size * args.grad_accum]]
            token_count = sum(sum(1 for label in labels[1:] if label != -100) for _, labels in group)
            summed = 0.0
            for micro in range(0, len(group), args.batch_size):
                loss, _ = answer_loss(model, group[micro : micro + args.batch_size], pad_id, device, torch)
                (loss / max(1, token_count)).backward()
                summed += float(loss.detach())
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            step += 1
            trained_tokens += token_count
            mean = summed / max(1, token_count)
            curve.append({"step": step, "loss": round(mean, 5), "gradNorm": round(float(norm), 4), "tokens": token_count})
            elapsed = time.perf_counter() - train_started
            log(f"step {step}/{total_steps}: loss {mean:.4f}, grad norm {float(norm):.3f}, {elapsed / step:.1f} s/step")
    trained = time.perf_counter()
    eval_after = mean_loss(model, held_out, args.batch_size, pad_id, device, torch)
    if eval_before is not None:
        log(f"held-out answer loss: {eval_before:.4f} before, {eval_after:.4f} after")

    model.to("cpu")
    detach_gguf_quantizer(model)
    hf_directory = out / "hf"
    model.save_pretrained(hf_directory, safe_serialization=True)
    tokenizer.save_pretrained(hf_directory)
    saved = time.perf_counter()
    gguf_path = None
    if converter is not None:
        gguf_path = convert_to_gguf(hf_directory, out / f"model.{args.outtype}.gguf", args.outtype, converter)
        log(f"wrote {gguf_path} ({gguf_path.stat().st_size / 1e6:.1f} MB)")
    converted = time.perf_counter()
    if not args.keep_hf:
        import shutil

        shutil.rmtree(hf_directory)
    metrics = {
        "baseGguf": str(base),
        "data": str(Path(args.data).resolve()),
        "device": device,
        "threads": torch.get_num_threads(),
        "scale": args.scale_label,
        "examples": {"train": len(train), "heldOut": len(held_out), "droppedTooLong": dropped},
        "settings": {
            "epochs": args.epochs,
            "maxSteps": args.max_steps,
            "steps": step,
            "batchSize": args.batch_size,
            "gradAccum": args.grad_accum,
            "learningRate": args.lr,
            "maxLength": args.max_length,
            "seed": args.seed,
        },
        "trainedAnswerTokens": trained_tokens,
        "heldOutLoss": {"before": eval_before, "after": eval_after},
        "curve": curve,
        "seconds": {
            "load": round(loaded - started, 1),
            "train": round(trained - train_started, 1),
            "save": round(saved - trained, 1),
            "convert": round(converted - saved, 1),
            "total": round(converted - started, 1),
        },
        "output": {
            "gguf": str(gguf_path) if gguf_path else None,
            "bytes": gguf_path.stat().st_size if gguf_path else None,
            "outtype": args.outtype,
        },
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return metrics


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Experience-model SFT on a GGUF model; writes a GGUF back.")
    parser.add_argument("--data", required=True, help="SFT JSONL from `dreamgym annotate` (sft.jsonl)")
    parser.add_argument("--out", required=True, help="output folder: model.<outtype>.gguf, metrics.json")
    parser.add_argument("--base-gguf", default=str(DEFAULT_MODEL), help="GGUF to start from (default: SmolLM2-135M-Instruct from the model cache)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's)")
    parser.add_argument("--max-examples", type=int, default=None, help="use the first N examples (reduced scale)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=None, help="stop after N optimiser steps")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--warmup", type=float, default=0.1, help="share of steps warming the learning rate up")
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--max-length", type=int, default=1536, help="longer examples are dropped, never cut")
    parser.add_argument("--eval-fraction", type=float, default=0.1, help="share of examples held out (by key)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--outtype", default="q8_0", choices=["q8_0", "f16", "bf16", "f32"])
    parser.add_argument("--no-gguf", action="store_true", help="skip the GGUF conversion")
    parser.add_argument("--keep-hf", action=argparse.BooleanOptionalAction, default=True, help="keep the Hugging Face weights in out/hf")
    parser.add_argument("--scale-label", default="custom", help="recorded in metrics.json (e.g. reduced-cpu, full-gpu)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        metrics = run(args)
    except SftError as error:
        print(f"experience_sft: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"gguf": metrics["output"]["gguf"], "heldOutLoss": metrics["heldOutLoss"], "seconds": metrics["seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
