"""The torch trainer's peak memory in one clipped policy update, against the samples in it.

Each update is one mini-batch of `n` sequence samples (random prompts of `--prompt` tokens,
completions of `--completion`), LoRA rank 16 on all 30 blocks of SmolLM2-135M, CPU, one
thread, run in a fresh process each so its peak RSS (VmHWM) is the update's. Before the fixes
of 2026-11-27 (outputs kept for the mismatch held their graphs; freed heap memory stayed in
the process) the peak grew ~1.3 GB per micro-batch and a 30-step ALFWorld update was killed at
21-23 GB; the peak should now be the same for every `n`.

Run: .venv/bin/python benchmarks/trainer_update_memory.py [--samples 6,24] [--prompt 600]
[--completion 32]. Prints one line per size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

TRAINER = Path(__file__).resolve().parents[1] / "trainers" / "python"

ONE_UPDATE = """
import sys, json, time, torch
sys.path.insert(0, {trainer!r})
from dreamgym_trainer.model_path import default_model_path
from dreamgym_trainer.policy_model import PolicyTrainer
from dreamgym_trainer.policy_update import clipped_update
from dreamgym_trainer.trainer_options import TrainerOptions
n, prompt, completion = {n}, {prompt}, {completion}
torch.set_num_threads(1)
trainer = PolicyTrainer(TrainerOptions(model=str(default_model_path()), lora_rank=16))
loaded = int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) / 2**20
generator = torch.Generator().manual_seed(1)
ids = lambda length: torch.randint(10, 40_000, (length,), generator=generator).tolist()
samples = [dict(prompt=ids(prompt), completion=ids(completion), behaviour=[-1.0] * completion, advantage=1.0) for _ in range(n)]
started = time.perf_counter()
clipped_update(trainer, samples, [[list(range(n))]], None, 1.0, 1e-4)
peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 2**20
print(json.dumps(dict(samples=n, loadedGiB=loaded, peakGiB=peak, seconds=time.perf_counter() - started)))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", default="6,24")
    parser.add_argument("--prompt", type=int, default=600)
    parser.add_argument("--completion", type=int, default=32)
    args = parser.parse_args()
    for n in [int(value) for value in args.samples.split(",")]:
        code = ONE_UPDATE.format(trainer=str(TRAINER), n=n, prompt=args.prompt, completion=args.completion)
        output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        figures = json.loads(output.strip().splitlines()[-1])
        print(
            f"{n} samples of {args.prompt}+{args.completion} tokens: peak RSS {figures['peakGiB']:.1f} GiB "
            f"(model loaded {figures['loadedGiB']:.1f}), update {figures['seconds']:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
