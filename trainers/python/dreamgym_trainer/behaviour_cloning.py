"""Behaviour cloning of the LLM policy from a token-id set, sized for every expert step on one
GPU (and runnable on the CPU at a small scale):

    python -m dreamgym_trainer.behaviour_cloning --data runs/llm-bc/alfworld-bc.jsonl \\
        --out runs/llm-bc/out --device cuda --epochs 2 --learning-rate 1e-3

The set is what `benchmarks/llm-bc-set.ts` writes (plain, `.gz` or `.xz`): a header line, then
one decision per line with the prompt and the expert's answer as the runtime's token ids, and,
for held-out games, the candidate actions. Training is answer-only negative log-likelihood
(token mean over a mini-batch), AdamW with linear warm-up and cosine decay, gradient clipping,
LoRA (all layers by default) or full fine-tuning of the GGUF's fp32 weights; rows are batched
by length under the model's plain causal mask (`packed_forward.answer_logprobs`), so a step
costs the forward and backward passes and nothing else.

Before training and after each evaluation interval, on held-out games only:
- `heldOutNll`: mean negative log-likelihood of the expert's answer (nats per decision), and
  `heldOutTokenNll` per answer token;
- `parsable`, `admissible`, `expertMatch`: of greedy generations (`sampling.generate`), the
  share that state an action in `<action></action>`, that state one of the candidates, and
  that state the expert's action;
- `scoreExpertMatch`: score selection (the candidate with the highest likelihood as an
  answer), the expert's action how often; score selection is never inadmissible.

`--max-seconds` bounds the training time: after the first steps the step count is fitted to
it, and the schedule decays over the steps that fit. Writes into `--out`: `metrics.json`
(settings, every evaluation, the loss curve, throughput) and `adapter/` (LoRA mode): the PEFT
adapter in fp16 (`adapter_config.json`, `adapter_model.safetensors`, what vLLM and SGLang
load) with `adapter.gguf` beside it (the same adapter for llama.cpp).
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import math
import os
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import torch

from .packed_forward import answer_logprobs
from .sampling import generate
from .samples import Sample
from .trainer_options import TrainerOptions

# With --max-seconds, the step count is fitted at FIT_AT_STEP from the time of the steps after
# the first WARMUP_STEPS.
WARMUP_STEPS = 10
FIT_AT_STEP = 40
ACTION_PATTERN = re.compile(r"<action>([\s\S]*?)</action>", re.IGNORECASE)


def affordable_steps(max_seconds: float, spent_seconds: float, steps_done: int, per_step: float, evaluation_seconds: float) -> int:
    """How many steps in all fit in a training time budget: those done, plus what the budget left
    after the time spent and the evaluations still to come buys at `per_step` seconds each."""
    left = max_seconds - spent_seconds - evaluation_seconds
    return steps_done + max(0, int(left / per_step))


def log(message: str) -> None:
    print(f"[behaviour-cloning] {message}", file=sys.stderr, flush=True)


class BehaviourCloningError(RuntimeError):
    """Bad input data or settings."""


@dataclass
class Decision:
    """One demonstrated decision of the set."""

    line: int
    task: str
    held_out: bool
    prompt: list[int]
    answer: list[int]
    action: str
    candidates: list[str] | None
    candidate_answers: list[list[int]] | None

    @property
    def length(self) -> int:
        return len(self.prompt) + len(self.answer)


def _open_text(path: Path):
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _ids(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not value or not all(isinstance(v, int) and v >= 0 for v in value):
        raise BehaviourCloningError(f"{where} must be a non-empty list of token ids")
    return value


def load_set(path: Path) -> tuple[dict, list[Decision]]:
    """The set's header and decisions; an error names the file, line and field."""
    if not path.is_file():
        raise BehaviourCloningError(f"{path} does not exist: write it with benchmarks/llm-bc-set.ts.")
    header: dict | None = None
    decisions: list[Decision] = []
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise BehaviourCloningError(f"{where}: invalid JSON ({error})") from error
            if "header" in record:
                header = record["header"]
                continue
            candidates = record.get("candidates")
            candidate_answers = record.get("candidateAnswers")
            if candidates is not None:
                if not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates):
                    raise BehaviourCloningError(f"{where}: `candidates` must be a list of strings")
                if not isinstance(candidate_answers, list) or len(candidate_answers) != len(candidates):
                    raise BehaviourCloningError(f"{where}: `candidateAnswers` must give the token ids of each candidate")
                candidate_answers = [_ids(c, f"{where}: candidateAnswers[{i}]") for i, c in enumerate(candidate_answers)]
            action = record.get("action")
            if not isinstance(action, str) or not action:
                raise BehaviourCloningError(f"{where}: `action` must be the expert's action")
            decisions.append(
                Decision(
                    line=number,
                    task=str(record.get("task", "")),
                    held_out=bool(record.get("heldOut", False)),
                    prompt=_ids(record.get("prompt"), f"{where}: prompt"),
                    answer=_ids(record.get("answer"), f"{where}: answer"),
                    action=action,
                    candidates=candidates,
                    candidate_answers=candidate_answers,
                )
            )
    if header is None:
        raise BehaviourCloningError(f"{path}: no header line (`{{\"header\": ...}}`); was it written by llm-bc-set.ts?")
    return header, decisions


def normalise_action(action: str) -> str:
    return re.sub(r"\s+", " ", action.strip()).lower()


def stated_action(text: str) -> str | None:
    """The action an answer states in `<action></action>` (the last non-empty one), or None."""
    found = None
    for match in ACTION_PATTERN.finditer(text):
        if match.group(1).strip():
            found = match.group(1).strip()
    return found


def length_batches(decisions: list[Decision], batch_size: int, rng: random.Random) -> list[list[Decision]]:
    """Shuffled mini-batches of `batch_size` decisions of similar length: shuffled, then
    sorted by length within windows of 50 batches, cut, and the batches shuffled."""
    order = decisions[:]
    rng.shuffle(order)
    window = batch_size * 50
    batches: list[list[Decision]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda d: d.length)
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def micro_batches(batch: list[Decision], max_tokens: int) -> Iterator[list[Decision]]:
    """Consecutive slices of `batch` whose padded size stays within `max_tokens`."""
    current: list[Decision] = []
    longest = 0
    for decision in sorted(batch, key=lambda d: d.length):
        if current and max(longest, decision.length) * (len(current) + 1) > max_tokens:
            yield current
            current, longest = [], 0
        current.append(decision)
        longest = max(longest, decision.length)
    if current:
        yield current


class Evaluator:
    """The held-out figures of the current weights."""

    def __init__(self, trainer: Any, text: Any, nll_set: list[Decision], decision_set: list[Decision], args):
        self.trainer = trainer
        self.text = text
        self.nll_set = nll_set
        self.decision_set = decision_set
        self.args = args
        self.stop_tokens = {decision.answer[-1] for decision in decision_set + nll_set}
        self.examples: list[dict] = []

    def __call__(self) -> dict:
        started = time.perf_counter()
        trainer, args = self.trainer, self.args
        autocast = _autocast(args)
        trainer.causal_lm.eval()
        total, tokens = 0.0, 0
        with torch.inference_mode():
            for batch in micro_batches(self.nll_set, args.max_batch_tokens):
                for logprobs in answer_logprobs(
                    trainer.causal_lm, trainer.device, [(d.prompt, d.answer) for d in batch], autocast
                ):
                    total -= float(logprobs.sum())
                    tokens += logprobs.numel()
        counts = {"parsable": 0, "admissible": 0, "expertMatch": 0, "scoreExpertMatch": 0, "stoppedAtLength": 0}
        self.examples = []
        for start in range(0, len(self.decision_set), args.generation_batch):
            chunk = self.decision_set[start : start + args.generation_batch]
            generations = generate(
                trainer.causal_lm,
                trainer.device,
                [d.prompt for d in chunk],
                max_new_tokens=args.max_new_tokens,
                stop_tokens=self.stop_tokens,
                temperature=0.0,
                autocast=autocast,
            )
            scored = trainer.packed.evaluate(
                [
                    Sample(d.prompt, d.candidate_answers, 0, None, None, 0.0)  # type: ignore[arg-type]
                    for d in chunk
                ]
            )
            for decision, generation, score in zip(chunk, generations, scored):
                answer = self.text.decode(generation.tokens)
                action = stated_action(answer)
                candidates = {normalise_action(c) for c in decision.candidates or []}
                expert = normalise_action(decision.action)
                counts["stoppedAtLength"] += generation.finish == "length"
                if action is not None:
                    counts["parsable"] += 1
                    counts["admissible"] += normalise_action(action) in candidates
                    counts["expertMatch"] += normalise_action(action) == expert
                best = int(torch.argmax(score.token_logprobs))
                counts["scoreExpertMatch"] += normalise_action(decision.candidates[best]) == expert  # type: ignore[index]
                if len(self.examples) < 12:
                    self.examples.append({"expert": decision.action, "answer": answer, "scored": decision.candidates[best]})  # type: ignore[index]
        decisions = max(1, len(self.decision_set))
        trainer.causal_lm.train()
        return {
            "heldOutNll": total / max(1, len(self.nll_set)),
            "heldOutTokenNll": total / max(1, tokens),
            **{name: value / decisions for name, value in counts.items()},
            "decisions": len(self.decision_set),
            "nllDecisions": len(self.nll_set),
            "seconds": time.perf_counter() - started,
        }


def _autocast(args) -> torch.dtype | None:
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "none": None}[args.autocast]


def learning_rate_at(step: int, total: int, args) -> float:
    warmup = max(1, round(total * args.warmup))
    if step < warmup:
        return args.learning_rate * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    floor = args.learning_rate * args.min_lr_ratio
    return floor + (args.learning_rate - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from .model_path import default_model_path

    parser = argparse.ArgumentParser(prog="python -m dreamgym_trainer.behaviour_cloning", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the set (benchmarks/llm-bc-set.ts); .gz and .xz are read too")
    parser.add_argument("--model", type=Path, default=default_model_path(), help="base GGUF (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--mode", choices=["lora", "full"], default="lora")
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--lora-alpha", type=float, default=None, help="default: twice the rank")
    parser.add_argument("--top-layers", type=int, default=None, help="LoRA on the top N layers only (default: all)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup", type=float, default=0.03, help="share of the steps spent warming up")
    parser.add_argument("--min-lr-ratio", type=float, default=0.1, help="the cosine decay's floor, as a share of the peak")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--epochs", type=float, default=1.0, help="passes over the training decisions (fractions allowed)")
    parser.add_argument("--batch-size", type=int, default=32, help="decisions per optimiser step")
    parser.add_argument("--max-batch-tokens", type=int, default=16384, help="padded tokens per forward pass (activation memory grows with it)")
    parser.add_argument("--max-seconds", type=float, default=None, help="training time budget; the step count is fitted to it")
    parser.add_argument("--max-train", type=int, default=None, help="use at most this many training decisions")
    parser.add_argument("--evaluations", type=int, default=4, help="evaluations during training (and one before)")
    parser.add_argument("--eval-decisions", type=int, default=256, help="held-out decisions generated and scored")
    parser.add_argument("--eval-nll", type=int, default=2048, help="held-out decisions whose answer likelihood is measured")
    parser.add_argument("--generation-batch", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--autocast", choices=["bf16", "fp16", "none"], default="bf16", help="compute type on CUDA (weights stay fp32)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.lora_alpha is None:
        args.lora_alpha = 2.0 * args.lora_rank
    if not (args.device == "cpu" or args.device.startswith("cuda")):
        parser.error(f"--device must be cpu or cuda[:N], got {args.device!r}")
    if args.batch_size < 1 or args.epochs <= 0 or args.learning_rate <= 0:
        parser.error("--batch-size, --epochs and --learning-rate must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except BehaviourCloningError as error:
        log(f"error: {error}")
        return 2


def run(args: argparse.Namespace) -> int:
    from .gguf_io import scan_gguf
    from .policy_model import PolicyTrainer
    from .token_text import TokenText
    from .trainer_state import save_peft_adapter

    started = time.perf_counter()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    header, decisions = load_set(args.data)
    rng = random.Random(args.seed)
    train = [d for d in decisions if not d.held_out]
    held_out = [d for d in decisions if d.held_out]
    if args.max_train is not None:
        train = rng.sample(train, min(args.max_train, len(train)))
    if not train or not held_out:
        raise BehaviourCloningError(f"{args.data}: needs training and held-out decisions (has {len(train)} and {len(held_out)})")
    with_candidates = [d for d in held_out if d.candidates]
    decision_set = rng.sample(with_candidates, min(args.eval_decisions, len(with_candidates)))
    nll_set = rng.sample(held_out, min(args.eval_nll, len(held_out)))
    log(f"{len(train)} training decisions, {len(held_out)} held out; evaluating {len(nll_set)} (NLL) and {len(decision_set)} (actions)")

    options = TrainerOptions(
        model=str(args.model),
        mode=args.mode,
        lora_rank=args.lora_rank,
        lora_alpha=args.lora_alpha,
        lora_top_layers=args.top_layers,
        learning_rate=args.learning_rate,
        weight_decay=args.weight_decay,
        seed=args.seed,
        device=args.device,
        max_batch_tokens=args.max_batch_tokens,
    )
    trainer = PolicyTrainer(options, log=log)
    text = TokenText(scan_gguf(str(args.model)))
    evaluate = Evaluator(trainer, text, nll_set, decision_set, args)
    autocast = _autocast(args)
    args.out.mkdir(parents=True, exist_ok=True)

    steps_per_epoch = math.ceil(len(train) / args.batch_size)
    planned = max(1, round(steps_per_epoch * args.epochs))
    evaluations: list[dict] = []
    curve: list[dict] = []

    def record_evaluation(step: int) -> None:
        figures = evaluate()
        figures.update(step=step, epoch=step / steps_per_epoch, trainingSeconds=training_seconds)
        evaluations.append(figures)
        log(
            f"step {step} (epoch {figures['epoch']:.2f}): held-out NLL {figures['heldOutNll']:.3f}, parsable {figures['parsable']:.3f}, "
            f"admissible {figures['admissible']:.3f}, expert match {figures['expertMatch']:.3f}, score selection {figures['scoreExpertMatch']:.3f} ({figures['seconds']:.0f} s)"
        )

    training_seconds = 0.0
    record_evaluation(0)
    trainer.causal_lm.train()
    step = 0
    tokens_trained = 0
    epoch_rng = random.Random(args.seed + 1)
    batches: list[list[Decision]] = []
    fitted = args.max_seconds is None
    warm_seconds, warm_step = 0.0, 0
    next_evaluation = planned / args.evaluations
    while step < planned:
        if not batches:
            batches = length_batches(train, args.batch_size, epoch_rng)
        batch = batches.pop()
        step_started = time.perf_counter()
        for group in trainer.optimizer.param_groups:
            group["lr"] = learning_rate_at(step, planned, args)
        trainer.optimizer.zero_grad(set_to_none=True)
        answer_tokens = sum(len(d.answer) for d in batch)
        loss_total = 0.0
        for micro in micro_batches(batch, args.max_batch_tokens):
            logprobs = answer_logprobs(trainer.causal_lm, trainer.device, [(d.prompt, d.answer) for d in micro], autocast)
            loss = -torch.cat(logprobs).sum() / answer_tokens
            loss.backward()
            loss_total += float(loss.detach())
        norm = trainer.step(args.max_grad_norm)
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        training_seconds += time.perf_counter() - step_started
        tokens_trained += sum(d.length for d in batch)
        step += 1
        if step % 10 == 0 or step == planned:
            curve.append({"step": step, "loss": loss_total, "gradNorm": norm, "learningRate": learning_rate_at(step - 1, planned, args)})
        if step == WARMUP_STEPS:
            warm_seconds, warm_step = training_seconds, step
        if not fitted and step == FIT_AT_STEP:
            # Fit the step count to the time budget (less the evaluations still to come), timing
            # only the steps after the warm-up: the first ones (allocator, kernel selection) ran
            # about twice as slow on an H200 and made the fit stop at 0.63 of a 1.0-epoch plan.
            per_step = (training_seconds - warm_seconds) / (step - warm_step)
            affordable = affordable_steps(args.max_seconds, training_seconds, step, per_step, evaluations[0]["seconds"] * args.evaluations)
            if affordable < planned:
                log(f"{per_step:.3f} s per step: {affordable} of the {planned} planned steps fit in {args.max_seconds:.0f} s")
                planned = affordable
                next_evaluation = planned / args.evaluations
            fitted = True
        if step % 50 == 0:
            log(f"step {step}/{planned}: loss {loss_total:.4f}, {tokens_trained / training_seconds:.0f} tokens/s")
        if step >= next_evaluation - 1e-9 or step == planned:
            record_evaluation(step)
            next_evaluation += planned / args.evaluations
    adapter = save_peft_adapter(trainer, str(args.out / "adapter")) if args.mode == "lora" else None
    metrics = {
        "what": "behaviour cloning of the LLM policy (dreamgym_trainer.behaviour_cloning)",
        "data": {"file": str(args.data), "header": header, "train": len(train), "heldOut": len(held_out)},
        "model": str(args.model),
        "device": str(trainer.device),
        "deviceName": torch.cuda.get_device_name(trainer.device) if trainer.device.type == "cuda" else "cpu",
        "settings": {
            key: (str(value) if isinstance(value, Path) else value) for key, value in vars(args).items()
        },
        "trainableParameters": sum(p.numel() for p in trainer.trainable),
        "steps": step,
        "stepsPerEpoch": steps_per_epoch,
        "epochsTrained": step / steps_per_epoch,
        "trainingSeconds": training_seconds,
        "tokensPerSecond": tokens_trained / max(1e-9, training_seconds),
        "evaluations": evaluations,
        "examples": evaluate.examples,
        "curve": curve,
        "adapter": adapter,
        "seconds": time.perf_counter() - started,
    }
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    log(f"wrote {args.out}/metrics.json ({step} steps, {training_seconds:.0f} s training, {metrics['seconds']:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
