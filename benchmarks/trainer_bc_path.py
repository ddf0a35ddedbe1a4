"""The torch worker's behaviour-cloning data path, before and after (issue 31): one forward and
backward pass on the same mini-batch of real ALFWorld decisions (the set `llm-bc-set.ts`
writes), through the packed forward pass the worker used for every sample (a dense attention
mask built row by row in Python, which sends attention to the unfused kernel) and through
`answer_logprobs` (padded causal rows, no mask). Each path runs in its own process, so its peak
memory is its own; the two alternate, so that machine load falls on both alike. Also the size
of the one JSON request that carried a whole data set before `imitate` requests were capped
at 512 samples.

    .venv/bin/python benchmarks/trainer_bc_path.py --data runs/llm-bc/alfworld-bc.jsonl.xz \\
        [--batch 8] [--rounds 2] [--threads 2] [--device cpu]

Writes benchmarks/results/trainer-bc-path.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
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


def one_step(args: argparse.Namespace) -> dict:
    """One pass of `args.path` in this process: seconds and peak resident memory."""
    torch.set_num_threads(args.threads)
    _, decisions = load_set(args.data)
    train = [d for d in decisions if not d.held_out]
    batch = random.Random(0).sample(train, args.batch)
    samples = [Sample(d.prompt, [d.answer], None, None, None, 0.0) for d in batch]
    trainer = PolicyTrainer(
        TrainerOptions(model=str(default_model_path()), device=args.device, max_batch_tokens=1 << 20)
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    seconds = (step_packed if args.path == "packed" else step_padded)(trainer, samples)
    with torch.no_grad():
        if args.path == "packed":
            likelihood = [float(o.token_logprobs.sum()) for o in trainer.packed.forward(samples, False)]
        else:
            rows = [(s.prompt, s.continuations[0]) for s in samples]
            likelihood = [float(t.sum()) for t in answer_logprobs(trainer.causal_lm, trainer.device, rows)]
    return {
        "seconds": seconds,
        "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "rssBeforeBytes": before,
        "tokens": sum(d.length for d in batch),
        "likelihood": likelihood,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--path", choices=["packed", "padded"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.path:
        print(json.dumps(one_step(args)), flush=True)
        return 0
    runs: dict[str, list[dict]] = {"packed": [], "padded": []}
    for round_index in range(args.rounds):
        for name in ["packed", "padded"] if round_index % 2 == 0 else ["padded", "packed"]:
            completed = subprocess.run(
                [sys.executable, __file__, "--data", str(args.data), "--batch", str(args.batch),
                 "--threads", str(args.threads), "--device", args.device, "--path", name],
                capture_output=True, text=True, check=True,
            )
            runs[name].append(json.loads(completed.stdout.strip().splitlines()[-1]))
            print(f"round {round_index + 1} {name}: {runs[name][-1]['seconds']:.1f} s, peak {runs[name][-1]['peakRssBytes'] / 2**30:.1f} GiB", file=sys.stderr, flush=True)
    header, decisions = load_set(args.data)
    train = [d for d in decisions if not d.held_out]
    request_bytes = len(json.dumps({"samples": [{"prompt": d.prompt, "completion": d.answer} for d in train]}).encode())
    median = lambda name, key: statistics.median(run[key] for run in runs[name])  # noqa: E731
    gap = max(abs(a - b) for a, b in zip(runs["packed"][0]["likelihood"], runs["padded"][0]["likelihood"]))
    result = {
        "benchmark": "trainer-bc-path",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "what": "One forward and backward pass (LoRA rank 16 on every layer of SmolLM2-135M, fp32) on the same mini-batch of real ALFWorld decisions: the worker's packed forward (dense per-row masks) vs answer_logprobs (padded causal rows); each in its own process (peak RSS is the pass's), alternated; medians.",
        "device": args.device,
        "threads": args.threads,
        "loadAverage": os.getloadavg(),
        "batch": args.batch,
        "tokens": runs["padded"][0]["tokens"],
        "rounds": args.rounds,
        "secondsPerStep": {name: median(name, "seconds") for name in runs},
        "peakRssGiB": {name: median(name, "peakRssBytes") / 2**30 for name in runs},
        "speedup": median("packed", "seconds") / median("padded", "seconds"),
        "memoryRatio": median("packed", "peakRssBytes") / median("padded", "peakRssBytes"),
        "largestLogLikelihoodGap": gap,
        "wholeSetRequest": {
            "decisions": len(train),
            "bytes": request_bytes,
            "note": "the JSON line one imitate request carried for the whole set before requests were capped at 512 samples",
        },
        "setHeader": {key: header.get(key) for key in ("samples", "trajectories", "heldOutGames")},
    }
    out = ROOT / "benchmarks" / "results" / "trainer-bc-path.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("secondsPerStep", "peakRssGiB", "speedup", "memoryRatio", "largestLogLikelihoodGap")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
