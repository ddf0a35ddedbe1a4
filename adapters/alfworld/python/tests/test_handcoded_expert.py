"""ALFWorld's handcoded expert served by ``handcoded_expert: true``: on a train game whose
demonstration took no random fallback, following ``expert_action`` replays the demonstration
of ``expert_trajectories.jsonl`` turn for turn."""

from __future__ import annotations

import json
import os

from dreamgym_alfworld_server.handcoded_expert import task_parameters, to_expert_grammar, to_game_grammar

GAME = "train/pick_and_place_simple-CellPhone-None-Bed-306/trial_T20190909_012724_686117"


def _demonstration(data_dir: str) -> dict:
    with open(os.path.join(data_dir, "expert_trajectories.jsonl"), encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["game"] == GAME:
                return record
    raise AssertionError(f"{GAME} is not in expert_trajectories.jsonl")


def test_following_expert_action_replays_the_demonstration(client, data_dir):
    session = client.post("/create")[1]["id"]
    status, payload = client.post("/reset", {"id": session, "game": GAME, "handcoded_expert": True, "seed": 0})
    assert status == 200, payload
    turns = [payload["observation"]]
    while not payload["won"]:
        action = payload["expert_action"]
        assert action, payload.get("expert_failure")
        payload = client.post("/step", {"id": session, "action": action})[1]
        turns += [action, payload["observation"]]
    assert payload["expert_action"] is None
    assert turns == [turn["value"] for turn in _demonstration(data_dir)["conversations"]]


def test_handcoded_expert_options_are_checked(client):
    session = client.post("/create")[1]["id"]
    status, body = client.post("/reset", {"id": session, "game": GAME, "handcoded_expert": "yes"})
    assert status == 400 and "`handcoded_expert` must be true or false" in body["error"]
    status, body = client.post("/reset", {"id": session, "game": GAME, "handcoded_expert": True, "seed": "1"})
    assert status == 400 and "`seed` must be an integer" in body["error"]


def test_task_parameters_come_from_the_task_folder_and_grammars_round_trip(data_dir):
    parameters = task_parameters(os.path.join(data_dir, GAME, "game.tw-pddl"))
    assert parameters["task_type"] == "pick_and_place_simple"
    assert (parameters["object_target"], parameters["parent_target"]) == ("CellPhone", "Bed")
    assert to_expert_grammar("put cellphone 1 in/on bed 1") == "move cellphone 1 to bed 1"
    assert to_game_grammar("move cellphone 1 to bed 1") == "put cellphone 1 in/on bed 1"
