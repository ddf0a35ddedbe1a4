"""The TRL example, for real: GRPOTrainer trains SmolLM2-135M-Instruct (the cached GGUF,
fp32) for two steps of two episodes against `dreamgym serve` on ALFWorld, episodes played through the OpenEnv
client in `rollout_func`. The policy's weights change, and the server's episode count,
curriculum and replay buffer move. Runs on CPU (on a GPU where there is one): 120 s here on two
busy cores, 155 s when the GGUF is first converted (see README.md)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

EXAMPLE = Path(__file__).resolve().parents[1]
REPOSITORY = EXAMPLE.parents[1]
sys.path.insert(0, str(EXAMPLE))
sys.path.insert(0, str(REPOSITORY / "packages" / "server" / "python"))

import train_grpo  # noqa: E402
from dreamgym_serve_process import ServeProcess, data_directory  # noqa: E402

NUM_GENERATIONS = 2
STEPS = 2
MAX_STEPS = 2


def test_choose_reads_the_action_a_small_model_writes():
    actions = ["go to desk 1", "go to desk 10", "go to shelf 1", "inventory", "look"]
    assert train_grpo.choose("go to desk 10\nand then", actions) == "go to desk 10"
    assert train_grpo.choose("- go to desk 1.", actions) == "go to desk 1"
    assert train_grpo.choose("You go to the shelf 1.", actions) == "go to shelf 1"
    assert train_grpo.choose("2) look around", actions) == "look"
    assert train_grpo.choose("you have an inventory.", actions) == "inventory"
    assert train_grpo.choose("fly to the moon.", actions) == "fly to the moon"
    assert train_grpo.choose("", actions) == "look"


def test_closeness_grades_what_a_small_model_writes():
    actions = ["go to desk 1", "take book 2 from bed 1", "look"]
    assert train_grpo.closeness("go to desk 1", actions) == 1.0
    assert train_grpo.closeness("You go to the desk 1.", actions) == 1.0
    # Texts seen from SmolLM2-135M-Instruct: chat, partly overlapping an action, or not at all.
    near = train_grpo.closeness("The actions described are all related to bringing the book to the desk", actions)
    far = train_grpo.closeness("I'm glad you're happy to have me help you with", actions)
    assert 0.0 < far < near < 1.0
    assert train_grpo.closeness("Hello there!", actions) == 0.0
    assert train_grpo.closeness("", actions) == 0.0
    assert train_grpo.closeness("go to desk 1", []) == 0.0


def test_grpo_trains_smollm2_against_dreamgym_serve():
    try:
        data = data_directory("alfworld")
    except RuntimeError as error:
        pytest.fail(str(error))
    started = time.perf_counter()
    server = ServeProcess(
        [
            "--domain", "alfworld", "--data", data, "--host", "127.0.0.1", "--port", "0",
            "--run-dir", tempfile.mkdtemp(prefix="dreamgym-trl-"),
            "--offline-limit", "300", "--train-tasks", "12", "--index", "flat",
            "--max-steps", str(MAX_STEPS), "--tasks-per-iteration", "1",
            "--rollouts-per-task", str(NUM_GENERATIONS),
        ]
    )  # fmt: skip
    try:
        assert server.url.startswith("http://127.0.0.1:"), server.url
        before = server.status()
        # One thread: on a shared 2-core machine, two OpenMP threads that spin while other
        # processes hold the cores made generation six times slower (measured here).
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            trainer, rollout = train_grpo.build_trainer(
                server.url,
                steps=STEPS,
                num_generations=NUM_GENERATIONS,
                learning_rate=1e-5,
                max_new_tokens=8,
                max_actions=8,
            )
            initial = {name: parameter.detach().clone() for name, parameter in trainer.model.named_parameters()}
            trainer.train()
        finally:
            torch.set_num_threads(threads)
        deltas = {
            name: (parameter.detach() - initial[name]).abs().max().item()
            for name, parameter in trainer.model.named_parameters()
        }
        after = server.status()
    finally:
        code = server.stop()
    assert code == 0, server.logs()

    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    print(
        f"\n[trl-grpo] {time.perf_counter() - started:.1f} s; per step: "
        + "; ".join(f"loss {entry['loss']}, reward {entry['reward']} (std {entry['reward_std']})" for entry in logged)
        + f"; max |weight delta| {max(deltas.values()):.3g} over {sum(delta > 0 for delta in deltas.values())}/"
        f"{len(deltas)} tensors; server: episodes {before['episodes']['finished']} -> {after['episodes']['finished']}, "
        f"iteration {before['iteration']} -> {after['iteration']}, observed tasks "
        f"{before['curriculum']['observedTasks']} -> {after['curriculum']['observedTasks']}, buffer written "
        f"{before['buffer']['written']} -> {after['buffer']['written']}, synthetic "
        f"{before['buffer']['bySource'].get('synthetic', 0)} -> {after['buffer']['bySource'].get('synthetic', 0)}"
    )

    # The policy learnt: GRPO found reward differences within a group and stepped the weights.
    assert len(logged) == STEPS
    assert any(entry["reward_std"] > 0 for entry in logged), "every GRPO group had equal rewards"
    changed = [name for name, delta in deltas.items() if delta > 0]
    assert changed, "no weight changed"
    assert deltas["model.layers.0.self_attn.q_proj.weight"] > 0

    episodes = rollout.episodes
    assert len(episodes) == STEPS * NUM_GENERATIONS
    # Each group replays the task its first episode drew from the curriculum.
    for start in range(0, len(episodes), NUM_GENERATIONS):
        assert len({episode.task_id for episode in episodes[start : start + NUM_GENERATIONS]}) == 1
    assert all(1 <= episode.steps <= MAX_STEPS for episode in episodes)
    assert all(len(episode.env_mask) == len(episode.completion_ids) == len(episode.logprobs) for episode in episodes)

    # The server saw every episode: counted, observed by the curriculum, written to the buffer.
    assert after["episodes"]["finished"] - before["episodes"]["finished"] == len(episodes)
    assert after["episodes"]["abandoned"] == before["episodes"]["abandoned"]
    assert after["iteration"] - before["iteration"] == STEPS
    assert before["curriculum"]["observedTasks"] == 0
    groups = {episode.task_id for episode in episodes}
    assert after["curriculum"]["observedTasks"] == len(groups)
    steps = sum(episode.steps for episode in episodes)
    assert after["steps"] - before["steps"] == steps
    assert after["buffer"]["written"] - before["buffer"]["written"] == steps
    assert after["buffer"]["size"] > before["buffer"]["size"]
    assert after["buffer"]["bySource"]["synthetic"] - before["buffer"]["bySource"].get("synthetic", 0) == steps
