"""A quick check, on the GPU machine before a long run, that the trainer's code paths work with
the libraries there (its torch, transformers and peft differ from this repository's pins): a
tiny random Llama with LoRA runs the behaviour-cloning loss and its backward pass under
autocast, batched generation (greedy and sampled) and candidate scoring, on CUDA when there is
one. Needs no model file. Prints the versions and `cuda smoke: ok`.

    PYTHONPATH=trainers/python python3 benchmarks/gpu/cuda_smoke.py
"""

from __future__ import annotations

import time

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

from dreamgym_trainer.packed_forward import PackedForward, answer_logprobs
from dreamgym_trainer.samples import Sample
from dreamgym_trainer.sampling import generate
from dreamgym_trainer.trainer_options import TrainerOptions

started = time.perf_counter()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}, device {device}")
torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True,
)
model = get_peft_model(LlamaForCausalLM(config), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
causal_lm = model.get_base_model().to(device)
rows = [([1, 2, 3, 4, 5], [6, 7, 8]), ([9, 10], [11, 12, 13, 14])]
logprobs = answer_logprobs(causal_lm, device, rows, torch.bfloat16)
loss = -torch.cat(logprobs).mean()
loss.backward()
assert [len(t) for t in logprobs] == [3, 4] and torch.isfinite(loss)
assert any(p.grad is not None for n, p in causal_lm.named_parameters() if "lora_" in n)
for temperature in (0.0, 1.0):
    out = generate(causal_lm, device, [[1, 2, 3], [4, 5, 6, 7, 8]], max_new_tokens=5, stop_tokens={3}, temperature=temperature, seed=1, autocast=torch.bfloat16)
    assert len(out) == 2 and all(0 < len(g.tokens) <= 5 and len(g.logprobs) == len(g.tokens) for g in out)
packed = PackedForward(causal_lm, device, TrainerOptions(model="none"), 0)
scores = packed.evaluate([Sample([1, 2, 3], [[4, 5], [6], [7, 8, 9]], 0, None, None, 0.0)])
assert scores[0].token_logprobs.shape == (3,)
print(f"cuda smoke: ok ({time.perf_counter() - started:.1f} s)")
