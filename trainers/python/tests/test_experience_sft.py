"""The experience-model SFT script at tiny scale on the real SmolLM2 GGUF: answer-only loss
falls on the examples it trains on, the gguf quantizer is detached so the weights save, and
llama.cpp's converter writes a q8_0 GGUF with the model's tensors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import experience_sft  # noqa: E402
from gguf_converter import ensure_converter  # noqa: E402

STATES = [
    ("go to fridge 1", "The fridge 1 is closed."),
    ("open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see a apple 2."),
]


def example(index: int, action: str, outcome: str) -> dict:
    answer = json.dumps(
        {"reasoning": f"The agent does: {action}.", "nextState": outcome, "done": False, "success": False}
    )
    return {
        "messages": [
            {"role": "system", "content": "You are the world model of a text environment."},
            {"role": "user", "content": f"Action: {action}"},
            {"role": "assistant", "content": answer},
        ],
        "meta": {"key": f"k{index}"},
    }


@pytest.fixture(scope="module")
def base_gguf() -> Path:
    path = experience_sft.DEFAULT_MODEL
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `dreamgym model pull smollm2-135m-instruct` (or bash scripts/setup.sh).")
    return path


def test_sft_lowers_the_answer_loss_and_writes_a_gguf(tmp_path: Path, base_gguf: Path) -> None:
    ensure_converter()
    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps(example(i, a, o)) + "\n" for i, (a, o) in enumerate(STATES)))
    out = tmp_path / "out"
    code = experience_sft.main([
        "--data", str(data), "--out", str(out), "--base-gguf", str(base_gguf), "--device", "cpu",
        "--threads", "1", "--max-steps", "3", "--batch-size", "2", "--lr", "2e-4", "--warmup", "0",
        "--eval-fraction", "0", "--max-length", "512", "--scale-label", "test",
    ])
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    losses = [point["loss"] for point in metrics["curve"]]
    # The same two examples at every step: gradient descent must lower their loss.
    assert len(losses) == 3
    assert losses[-1] < losses[0], losses
    assert metrics["examples"] == {"train": 2, "heldOut": 0, "droppedTooLong": 0}
    assert metrics["scale"] == "test"
    assert (out / "hf" / "config.json").is_file()
    assert "quantization_config" not in json.loads((out / "hf" / "config.json").read_text())

    from gguf import GGUFReader

    gguf_path = Path(metrics["output"]["gguf"])
    assert gguf_path.name == "model.q8_0.gguf" and gguf_path.is_file()
    reader = GGUFReader(str(gguf_path))
    base = GGUFReader(str(base_gguf))
    assert len(reader.tensors) == len(base.tensors)
    architecture = reader.fields["general.architecture"]
    assert bytes(architecture.parts[architecture.data[0]]).decode() == "llama"
    assert any(tensor.tensor_type.name == "Q8_0" for tensor in reader.tensors)


def test_bad_input_is_named(tmp_path: Path, base_gguf: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    code = experience_sft.main(["--data", str(bad), "--out", str(tmp_path / "o"), "--base-gguf", str(base_gguf), "--no-gguf"])
    assert code == 2
    assert f"{bad}:1: `messages` must be chat messages ending with the assistant's answer" in capsys.readouterr().err
    assert experience_sft.main(["--data", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o")]) == 2
