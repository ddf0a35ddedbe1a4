"""Interop: Meta's OpenEnv client (`openenv-core` from PyPI, written by nobody here) drives
full episodes of `dreamgym serve` over WebSocket and HTTP, and OpenEnv's own validator
accepts the server."""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import pytest
import requests
import websockets
from openenv.cli._validation import validate_running_environment
from openenv.core import GenericEnvClient
from openenv.core.env_server.types import (
    EnvironmentMetadata,
    HealthResponse,
    ResetRequest,
    ResetResponse,
    SchemaResponse,
    State,
    StepRequest,
    StepResponse,
)

MAX_STEPS = 12


def play(env, rng: random.Random, task_id: str | None = None) -> tuple[dict, int, float]:
    """One episode with random admissible actions; returns the last observation, steps, return."""
    result = env.reset(**({"task_id": task_id} if task_id else {}))
    assert result.done is False and result.reward is None
    observation = result.observation
    assert observation["text"] and observation["instruction"]
    assert observation["metadata"]["step"] == 0
    steps, total = 0, 0.0
    while not result.done:
        actions = observation["actions"] or ["look"]
        result = env.step({"action": rng.choice(actions)})
        observation = result.observation
        steps += 1
        total += result.reward
        assert isinstance(result.reward, (int, float))
        assert observation["metadata"]["step"] == steps
    return observation, steps, total


def test_websocket_episodes_with_the_openenv_client(server):
    before = server.status()
    rng = random.Random(0)
    with GenericEnvClient(base_url=server.url).sync() as env:
        first, steps, _ = play(env, rng)
        metadata = first["metadata"]
        # done is OpenEnv's; truncated (a limit, not the task, ended it) rides in the metadata.
        if metadata["truncated"]:
            assert steps == MAX_STEPS and metadata["success"] is False
        state = env.state()
        assert state["episode_id"] == metadata["episode_id"]
        assert state["step_count"] == steps and state["done"] is True
        # A GRPO group: the other members replay the task the first one drew.
        for _ in range(3):
            again, _, _ = play(env, rng, task_id=metadata["task_id"])
            assert again["metadata"]["task_id"] == metadata["task_id"]
    after = server.status()
    assert after["episodes"]["finished"] == before["episodes"]["finished"] + 4
    assert after["buffer"]["written"] > before["buffer"]["written"]
    assert after["buffer"]["bySource"]["synthetic"] > before["buffer"]["bySource"]["synthetic"]
    assert after["curriculum"]["observedTasks"] >= 1
    assert after["iteration"] >= 1


def test_concurrent_sessions_with_the_async_client(server):
    async def episode(seed: int) -> int:
        rng = random.Random(seed)
        async with GenericEnvClient(base_url=server.url) as env:
            result = await env.reset()
            steps = 0
            while not result.done:
                result = await env.step({"action": rng.choice(result.observation["actions"] or ["look"])})
                steps += 1
            return steps

    async def main() -> list[int]:
        return await asyncio.gather(*(episode(seed) for seed in range(4)))

    steps = asyncio.run(main())
    assert all(1 <= count <= MAX_STEPS for count in steps)


def test_http_episode_with_openenv_wire_types(server):
    rng = random.Random(1)
    body = ResetRequest(episode_id="interop-http-1").model_dump(exclude_unset=True)
    response = requests.post(f"{server.url}/reset", json=body, timeout=30)
    assert response.status_code == 200, response.text
    reset = ResetResponse.model_validate(response.json())
    assert reset.done is False and reset.reward is None
    assert reset.observation["metadata"]["episode_id"] == "interop-http-1"
    observation, done, steps = reset.observation, False, 0
    while not done:
        request = StepRequest(action={"action": rng.choice(observation["actions"])}, episode_id="interop-http-1")
        response = requests.post(f"{server.url}/step", json=request.model_dump(exclude_unset=True), timeout=30)
        assert response.status_code == 200, response.text
        step = StepResponse.model_validate(response.json())
        observation, done, steps = step.observation, step.done, steps + 1
        if not done:
            state = State.model_validate(
                requests.get(f"{server.url}/state", params={"episode_id": "interop-http-1"}, timeout=30).json()
            )
            assert state.step_count == steps and state.episode_id == "interop-http-1"
    assert steps <= MAX_STEPS
    assert observation["metadata"]["truncated"] is (steps == MAX_STEPS and not observation["metadata"]["success"])
    ended = requests.post(
        f"{server.url}/step", json={"action": {"action": "look"}, "episode_id": "interop-http-1"}, timeout=30
    )
    assert ended.status_code == 409 and "has ended" in ended.json()["detail"]
    invalid = requests.post(f"{server.url}/step", json={"action": {"verb": "look"}, "episode_id": "x"}, timeout=30)
    assert invalid.status_code == 422
    assert any(error["loc"][:2] == ["body", "action"] for error in invalid.json()["detail"])


def test_openenv_validator_and_wire_types_accept_the_server(server):
    report = validate_running_environment(server.url)
    failed = [criterion for criterion in report["criteria"] if not criterion["passed"]]
    assert report["passed"], failed
    assert report["mode"] == "simulation"
    schema = SchemaResponse.model_validate(requests.get(f"{server.url}/schema", timeout=30).json())
    assert schema.action["properties"]["action"]["type"] == "string"
    assert "truncated" in schema.observation["properties"]["metadata"]["properties"]
    metadata = EnvironmentMetadata.model_validate(requests.get(f"{server.url}/metadata", timeout=30).json())
    assert metadata.name == "dreamgym-alfworld"
    assert HealthResponse.model_validate(requests.get(f"{server.url}/health", timeout=30).json()).status == "healthy"


def test_protocol_errors_reach_the_client_and_the_session_goes_on(server):
    with GenericEnvClient(base_url=server.url).sync() as env:
        with pytest.raises(RuntimeError, match=r"step before reset.*code: EXECUTION_ERROR"):
            env.step({"action": "look"})
        with pytest.raises(RuntimeError, match=r"task_id \"no-such-task\".*code: VALIDATION_ERROR"):
            env.reset(task_id="no-such-task")
        with pytest.raises(RuntimeError, match=r"data\.action.*code: VALIDATION_ERROR"):
            env.reset()
            env.step({"command": "look"})
        observation, steps, _ = play(env, random.Random(2))
        assert steps >= 1 and observation["metadata"]["episode_id"]


def test_sessions_beyond_the_cap_are_refused(small_server):
    first = GenericEnvClient(base_url=small_server.url).sync()
    second = GenericEnvClient(base_url=small_server.url).sync()
    with first, second:
        first.reset()
        second.reset()
        third = GenericEnvClient(base_url=small_server.url).sync()
        try:
            with pytest.raises((RuntimeError, websockets.ConnectionClosed)) as refused:
                third.connect()
                third.reset()
            text = str(refused.value)
            assert "CAPACITY_REACHED" in text or "1013" in text, text
        finally:
            third.close()
        # The admitted sessions keep serving.
        play(first, random.Random(3))
    # And once they are gone, a new session is admitted.
    with GenericEnvClient(base_url=small_server.url).sync() as fourth:
        play(fourth, random.Random(4))


def test_the_readme_python_example_runs(server):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.S)
    assert block, "packages/server/README.md has a ```python block"
    seen: list[dict] = []

    def policy(observation: dict) -> str:
        seen.append(observation)
        return observation["actions"][0]

    exec(compile(block.group(1), "README.md", "exec"), {"url": server.url, "policy": policy})
    assert 1 <= len(seen) <= MAX_STEPS


def test_the_same_client_drives_the_real_engine(real_server):
    """Sim-to-real with one client: `dreamgym serve --real` serves the ALFWorld engine."""
    rng = random.Random(5)
    # The first reset starts the ALFWorld engine (a Python process loading the game files):
    # on a busy machine that takes longer than the client's default 60 s message timeout.
    with GenericEnvClient(base_url=real_server.url, message_timeout_s=300).sync() as env:
        result = env.reset()
        assert result.observation["actions"], "the real engine lists its admissible commands"
        steps = 0
        while not result.done:
            result = env.step({"action": rng.choice(result.observation["actions"])})
            steps += 1
        assert steps <= 4
        metadata = result.observation["metadata"]
        assert metadata["truncated"] is (steps == 4 and not metadata["success"])
    status = real_server.status()
    assert status["mode"] == "real"
    assert status["episodes"]["finished"] == 1
    assert status["buffer"]["bySource"]["real"] >= 1
    assert status["curriculum"]["generatedTasks"] == 0
