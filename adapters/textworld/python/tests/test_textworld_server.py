"""The TextWorld service on a generated game: generation skips games already there, the
walkthrough wins with reward 1, commands outside the game never reach the engine, and the
step limit truncates."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest

from dreamgym_textworld_server.generate import generate
from dreamgym_textworld_server.server import RequestError, TextworldService

SETTINGS = {"challenge": "tw-cooking", "rooms": 1, "open": True, "cook": True, "cut": True}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("textworld")
    lines: list[str] = []
    summary = generate(str(directory), {"train": 2, "valid": 0, "test": 0}, SETTINGS, emit=lines.append)
    assert summary == {"event": "done", "created": 2, "skipped": 0}
    assert [json.loads(line)["game"] for line in lines[:-1]] == ["train/cooking-r1-s0", "train/cooking-r2-s1"]
    return str(directory)


def test_generation_skips_games_already_there_and_refuses_other_settings(data_dir):
    assert generate(data_dir, {"train": 2}, SETTINGS, emit=lambda _line: None)["skipped"] == 2
    with pytest.raises(SystemExit, match="other generation settings"):
        generate(data_dir, {"train": 2}, {**SETTINGS, "rooms": 6}, emit=lambda _line: None)


def test_the_walkthrough_wins_with_reward_one_on_its_last_step(data_dir):
    service = TextworldService(data_dir)
    session = service.create()["id"]
    start = service.reset({"id": session, "game": "train/cooking-r2-s1"})
    assert start["info"]["objective"].startswith("You are hungry!")
    assert len(start["info"]["ingredients"]) == 2
    rewards = []
    for command in start["info"]["walkthrough"]:
        payload = service.step({"id": session, "action": command})
        rewards.append(payload["reward"])
    assert payload["won"] and payload["done"] and not payload["truncated"]
    assert rewards[-1] == 1.0 and set(rewards[:-1]) == {0.0}
    with pytest.raises(RequestError) as error:
        service.step({"id": session, "action": "look"})
    assert error.value.status == HTTPStatus.CONFLICT


def test_commands_outside_the_game_never_reach_the_engine(data_dir):
    service = TextworldService(data_dir)
    session = service.create()["id"]
    service.reset({"id": session, "game": 0, "max_steps": 7})
    for command in ("restart", "quit", "take all", "take knife and cookbook"):
        payload = service.step({"id": session, "action": command})
        assert payload["admissible"] is False and not payload["done"]
    # The story is not waiting for a yes/no answer: the game goes on.
    payload = service.step({"id": session, "action": "inventory"})
    assert payload["admissible"] is True
    assert "carrying" in payload["observation"]
    payload = service.step({"id": session, "action": "look"})
    payload = service.step({"id": session, "action": "look"})
    assert payload["steps"] == 7 and payload["done"] and payload["truncated"] and payload["reward"] == 0.0


def test_unknown_games_and_sessions_are_refused(data_dir):
    service = TextworldService(data_dir)
    session = service.create()["id"]
    with pytest.raises(RequestError) as error:
        service.reset({"id": session, "game": "train/nothing"})
    assert error.value.status == HTTPStatus.NOT_FOUND
    with pytest.raises(RequestError) as error:
        service.reset({"id": session, "game": "../etc/passwd"})
    assert error.value.status == HTTPStatus.BAD_REQUEST
    with pytest.raises(RequestError) as error:
        service.step({"id": 99, "action": "look"})
    assert error.value.status == HTTPStatus.NOT_FOUND
