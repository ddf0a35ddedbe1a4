"""Behaviour cloning from a token-id set (`dreamgym_trainer.behaviour_cloning`) on the real
embedded model, at a CPU scale: the demonstrated answers become likely, held-out figures are
reported before and after, the PEFT adapter folder (with its llama.cpp GGUF) is written and
loads back into a trainer of the same LoRA shape only; bad sets fail naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dreamgym_trainer.behaviour_cloning import BehaviourCloningError, affordable_steps, load_set, main, stated_action
from dreamgym_trainer.gguf_io import scan_gguf
from dreamgym_trainer.packed_forward import answer_logprobs
from dreamgym_trainer.policy_model import PolicyTrainer
from dreamgym_trainer.token_text import TokenText
from dreamgym_trainer.trainer_options import TrainerOptions
from dreamgym_trainer.trainer_state import CheckpointMismatch

# SmolLM2's token ids, as llama.cpp tokenises these texts.
PROMPT = [1, 9690, 198, 2683, 359, 253, 8085, 30, 2, 198, 1, 4093, 198]  # system: You are a robot.
TAKE = [44, 4667, 46, 21880, 1646, 9617, 4667, 46, 2]  # <action>take key</action><|im_end|>
GO = [44, 4667, 46, 2345, 1048, 9617, 4667, 46, 2]  # <action>go right</action><|im_end|>


def write_set(path: Path, train: int = 8, held_out: int = 4) -> Path:
    lines = [json.dumps({"header": {"what": "test set", "samples": train + held_out}})]
    for index in range(train + held_out):
        record = {
            "task": f"game-{index}",
            "heldOut": index >= train,
            "prompt": PROMPT + [300 + index, 198],
            "answer": TAKE,
            "action": "take key",
        }
        if index >= train:
            record["candidates"] = ["take key", "go right"]
            record["candidateAnswers"] = [TAKE, GO]
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


def likelihood(trainer: PolicyTrainer) -> float:
    """log p(TAKE | a held-out-like prompt) under the trainer's weights."""
    with torch.no_grad():
        return float(answer_logprobs(trainer.causal_lm, trainer.device, [(PROMPT + [310, 198], TAKE)])[0].sum())


def test_clones_the_demonstrations_and_writes_a_loadable_adapter(tmp_path: Path, model_path: Path):
    data = write_set(tmp_path / "set.jsonl")
    out = tmp_path / "out"
    code = main(
        [
            "--data", str(data), "--model", str(model_path), "--out", str(out), "--top-layers", "2",
            "--lora-rank", "4", "--learning-rate", "5e-3", "--epochs", "3", "--batch-size", "4",
            "--evaluations", "1", "--eval-decisions", "2", "--max-new-tokens", "10", "--threads", "1",
        ]
    )
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    first, last = metrics["evaluations"][0], metrics["evaluations"][-1]
    assert metrics["steps"] == 6 and len(metrics["evaluations"]) == 2
    assert last["heldOutNll"] < first["heldOutNll"] - 1.0
    for name in ("parsable", "admissible", "expertMatch", "scoreExpertMatch"):
        assert 0.0 <= last[name] <= 1.0
    assert last["scoreExpertMatch"] == 1.0
    adapter = out / "adapter"
    assert {p.name for p in adapter.iterdir()} == {"adapter_config.json", "adapter_model.safetensors", "adapter.gguf"}
    assert scan_gguf(str(adapter / "adapter.gguf")).get("adapter.type") == "lora"

    # The adapter loads back into a trainer of the same shape, and gives the trained likelihood.
    options = TrainerOptions(model=str(model_path), lora_rank=4, lora_alpha=8.0, lora_top_layers=2)
    trainer = PolicyTrainer(options)
    before = likelihood(trainer)
    trainer.load_adapter(str(adapter))
    after = likelihood(trainer)
    assert -after < last["heldOutNll"] + 0.5 and after > before + 1.0
    wider = PolicyTrainer(TrainerOptions(model=str(model_path), lora_rank=8, lora_top_layers=2))
    with pytest.raises(CheckpointMismatch, match="does not fit this trainer's LoRA"):
        wider.load_adapter(str(adapter))
    with pytest.raises(CheckpointMismatch, match="is missing"):
        wider.load_adapter(str(tmp_path))


def test_bad_sets_name_the_file_and_line(tmp_path: Path):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(BehaviourCloningError, match="does not exist"):
        load_set(missing)
    broken = write_set(tmp_path / "broken.jsonl")
    lines = broken.read_text().splitlines()
    lines[3] = lines[3][:-5]
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(BehaviourCloningError, match=r"broken\.jsonl:4: invalid JSON"):
        load_set(broken)
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(write_set(tmp_path / "x.jsonl").read_text().splitlines()[1:]) + "\n")
    with pytest.raises(BehaviourCloningError, match="no header line"):
        load_set(headless)
    bad_ids = tmp_path / "ids.jsonl"
    bad_ids.write_text(json.dumps({"header": {}}) + "\n" + json.dumps({"prompt": [1, -2], "answer": [2], "action": "a"}) + "\n")
    with pytest.raises(BehaviourCloningError, match=r"ids\.jsonl:2: prompt must be a non-empty list of token ids"):
        load_set(bad_ids)


def test_reads_actions_and_decodes_the_vocabulary(model_path: Path):
    assert stated_action("<action> take key </action><|im_end|>") == "take key"
    assert stated_action("<action></action> then <action>go right</action>") == "go right"
    assert stated_action("I would take the key") is None
    text = TokenText(scan_gguf(str(model_path)))
    assert text.decode(TAKE) == "<action>take key</action><|im_end|>"
    assert text.decode(PROMPT).startswith("<|im_start|>system\nYou are a robot.")


def test_the_time_budget_buys_the_steps_left_after_the_time_spent_and_the_evaluations():
    # 40 steps done in 20 s; 0.3 s per warm step; 100 s budget with 20 s of evaluations to come.
    assert affordable_steps(100.0, 20.0, 40, 0.3, 20.0) == 40 + 200
    # A budget already spent stops at the steps done.
    assert affordable_steps(10.0, 20.0, 40, 0.3, 5.0) == 40
