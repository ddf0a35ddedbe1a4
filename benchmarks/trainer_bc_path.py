"""The torch worker's behaviour-cloning data path, before and after (issue 31): one optimiser
step on the same mini-batch of real ALFWorld decisions (the set `llm-bc-set.ts` writes),
through the packed forward pass the worker used for every sample (a dense attention mask built
row by row in Python) and through `answer_logprobs` (padded causal rows, no mask), alternated
so that machine load falls on both alike. Also the size of the one JSON request that carried a
whole data set before `imitate` requests were capped at 512 samples.

    .venv/bin/python benchmarks/trainer_bc_path.py --data runs/llm-bc/alfworld-bc.jsonl.xz \\
        [--batch 32] [--rounds 3] [--threads 2] [--device cpu]

Writes benchmarks/results/trainer-bc-path.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "trainers" / "python"))

import torch  # noqa: E402

from dreamgym_trainer.behaviour_cloning import load_set  # noqa: E402
from dreamgym_trainer.model_path import default_model_path  # noqa: E402
from dreamgym_trainer.packed_forward import answer_logprobs  # noqa: E402
from dreamgym_trainer.policy_model import PolicyTrainer  # noqa: E402
from dreamgym_trainer.samples import Sample  # noqa: E402
from dreamgym_trainer.trainer_options import TrainerOptions  # noqa: E402


def step_packed(trainer: PolicyTrainer, samples: list[Sample]) -> float:
    started = time.perf_counter()
    trainer.optimizer.zero_grad(set_to_none=True)
    outputs = trainer.packed.forward(samples, False)
    loss = -torch.stack([output.token_logprobs.sum() for output in outputs]).sum()
    loss.backward()
    trainer.optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - started


def step_padded(trainer: PolicyTrainer, samples: list[Sample]) -> float:
    started = time.perf_counter()
    trainer.optimizer.zero_grad(set_to_none=True)
    rows = [(sample.prompt, sample.continuations[0]) for sample in samples]
    loss = -torch.cat(answer_logprobs(trainer.causal_lm, trainer.device, rows)).sum()
    loss.backward()
    trainer.optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    header, decisions = load_set(args.data)
    train = [d for d in decisions if not d.held_out]
    batch = random.Random(0).sample(train, args.batch)
    samples = [Sample(d.prompt, [d.answer], None, None, None, 0.0) for d in batch]
    trainer = PolicyTrainer(TrainerOptions(model=str(default_model_path()), device=args.device, max_batch_tokens=1 << 20))
    # Equal answers both ways first (the two paths compute the same log-likelihood).
    with torch.no_grad():
        packed = [float(o.token_logprobs.sum()) for o in trainer.packed.forward(samples, False)]
        padded = [float(t.sum()) for t in answer_logprobs(trainer.causal_lm, trainer.device, [(s.prompt, s.continuations[0]) for s in samples])]
    largest_gap = max(abs(a - b) for a, b in zip(packed, padded))
    times: dict[str, list[float]] = {"packed": [], "padded": []}
    step_padded(trainer, samples)  # warm-up
    for round_index in range(args.rounds):
        order = ["packed", "padded"] if round_index % 2 == 0 else ["padded", "packed"]
        for name in order:
            times[name].append((step_packed if name == "packed" else step_padded)(trainer, samples))
            print(f"round {round_index + 1} {name}: {times[name][-1]:.2f} s", file=sys.stderr, flush=True)
    request_bytes = len(
        json.dumps({"samples": [{"prompt": d.prompt, "completion": d.answer} for d in train]}).encode()
    )
    tokens = sum(d.length for d in batch)
    result = {
        "benchmark": "trainer-bc-path",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "what": "One behaviour-cloning step (forward and backward, LoRA rank 16 on every layer of SmolLM2-135M, fp32) on the same mini-batch of real ALFWorld decisions: the worker's packed forward (dense per-row masks) vs answer_logprobs (padded causal rows); median seconds of alternated rounds.",
        "device": args.device,
        "threads": args.threads,
        "loadAverage": os.getloadavg(),
        "batch": args.batch,
        "tokens": tokens,
        "rounds": args.rounds,
        "secondsPerStep": {name: statistics.median(values) for name, values in times.items()},
        "speedup": statistics.median(times["packed"]) / statistics.median(times["padded"]),
        "largestLogLikelihoodGap": largest_gap,
        "wholeSetRequest": {
            "decisions": len(train),
            "bytes": request_bytes,
            "note": "the JSON line one imitate request carried for the whole set before requests were capped at 512 samples",
        },
        "setHeader": {key: header.get(key) for key in ("samples", "trajectories", "heldOutGames")},
    }
    out = ROOT / "benchmarks" / "results" / "trainer-bc-path.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("secondsPerStep", "speedup", "largestLogLikelihoodGap")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
