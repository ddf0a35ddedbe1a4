"""The AgentGym ALFWorld protocol on the real engine: routes, payloads and error answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dreamgym_alfworld_server.engine import clean_feedback, task_type_of

BANNER = "-= Welcome to TextWorld, ALFRED! =-"


def commands(record: dict) -> list[str]:
    return [turn["value"] for turn in record["conversations"] if turn["from"] == "gpt"]


def observations(record: dict) -> list[str]:
    return [turn["value"] for turn in record["conversations"] if turn["from"] == "human"]


def test_health_names_the_data_and_engine_versions(client, data_dir):
    status, body = client.get("/health")
    assert status == 200
    assert body["status"] == "ok"
    assert body["data_dir"] == os.path.realpath(data_dir)
    assert body["versions"] == {"alfworld": "0.4.2", "textworld": "1.7.0"}


def test_create_gives_distinct_session_ids(client):
    first = client.post("/create")
    second = client.post("/create")
    assert first[0] == second[0] == 200
    assert isinstance(first[1]["id"], int)
    assert second[1]["id"] != first[1]["id"]


def test_expert_commands_win_the_game_with_the_recorded_observations(client, expert):
    session = client.post("/create")[1]["id"]
    status, reset = client.post("/reset", {"id": session, "game": expert["game"]})
    assert status == 200, reset
    recorded = observations(expert)
    assert reset["observation"] == recorded[0]
    assert reset["observation"].startswith(BANNER)
    assert reset["game"] == expert["game"]
    assert reset["task_type"] == expert["task_type"]
    assert (reset["done"], reset["won"], reset["reward"], reset["steps"]) == (False, False, 0.0, 0)
    actions = commands(expert)
    for index, action in enumerate(actions):
        assert action in client.get(f"/available_actions?id={session}")[1]
        status, step = client.post("/step", {"id": session, "action": action})
        assert status == 200, step
        assert step["observation"] == recorded[index + 1]
        assert step["admissible"] is True
        assert step["steps"] == index + 1
        last = index == len(actions) - 1
        assert (step["done"], step["won"], step["reward"]) == (last, last, 1.0 if last else 0.0)
    assert client.get(f"/observation?id={session}") == (200, recorded[-1])
    status, again = client.post("/step", {"id": session, "action": "look"})
    assert status == 409
    assert "has finished" in again["error"] and "POST /reset" in again["error"]


def test_reset_by_index_follows_the_sorted_game_list(client):
    status, games = client.get("/games?split=valid_seen")
    assert status == 200
    assert games == sorted(games) and len(games) == 140
    session = client.post("/create")[1]["id"]
    status, reset = client.post("/reset", {"id": session, "game": 3, "split": "valid_seen"})
    assert status == 200, reset
    assert reset["game"] == games[3]


def test_an_invalid_command_changes_nothing(client, expert):
    session = client.post("/create")[1]["id"]
    reset = client.post("/reset", {"id": session, "game": expert["game"] + "/game.tw-pddl"})[1]
    status, step = client.post("/step", {"id": session, "action": "fly to the moon"})
    assert status == 200
    assert step["observation"] == "Nothing happens."
    assert step["admissible"] is False
    assert (step["done"], step["reward"]) == (False, 0.0)
    assert step["available_actions"] == reset["available_actions"]


def test_max_steps_ends_the_episode_as_truncated(client, expert):
    session = client.post("/create")[1]["id"]
    client.post("/reset", {"id": session, "game": expert["game"], "max_steps": 1})
    status, step = client.post("/step", {"id": session, "action": "look"})
    assert status == 200
    assert (step["done"], step["truncated"], step["won"]) == (True, True, False)


def test_expert_plan_is_the_planner_plan_from_the_current_state(client, expert):
    session = client.post("/create")[1]["id"]
    reset = client.post("/reset", {"id": session, "game": expert["game"], "expert_plan": True})[1]
    plan = reset["expert_plan"]
    assert plan and all(action in reset["available_actions"] for action in plan[:1])
    for _ in range(len(plan)):
        step = client.post("/step", {"id": session, "action": plan[0]})[1]
        if step["won"]:
            break
        plan = step["expert_plan"]
    assert step["won"] is True


def test_errors_are_json_with_a_status_and_say_what_to_do(client, expert):
    session = client.post("/create")[1]["id"]
    cases = [
        (client.post("/step", {"id": 987654, "action": "look"}), 404, "no session with id 987654"),
        (client.get("/available_actions?id=987654"), 404, "no session with id 987654"),
        (client.get("/observation?id=abc"), 400, "`id` must be a session id"),
        (client.post("/step", {"id": session, "action": "look"}), 409, "POST /reset first"),
        (client.get(f"/observation?id={session}"), 409, "POST /reset first"),
        (client.post("/reset", {"id": session}), 400, "`game` is required"),
        (client.post("/reset", {"id": session, "game": 100000}), 404, "game index 100000 is out of range: split 'train' has 300 games"),
        (client.post("/reset", {"id": session, "game": "train/none/trial"}), 404, "no game file game.tw-pddl for game 'train/none/trial'"),
        (client.post("/reset", {"id": session, "game": "../../../etc"}), 404, "points outside the data directory"),
        (client.post("/reset", {"id": session, "game": 1.5}), 400, "`game` must be an integer index"),
        (client.post("/reset", {"id": session, "game": 0, "split": "test"}), 400, "`split` must be one of train, valid_seen, valid_unseen"),
        (client.post("/reset", {"id": session, "game": 0, "world_type": "Embody"}), 400, "only ('Text')"),
        (client.post("/reset", {"id": session, "game": 0, "max_steps": 0}), 400, "`max_steps` must be a positive integer"),
        (client.post("/step", {"id": session, "action": 3}), 400, "`action` must be a string"),
        (client.request("POST", "/step", raw=b"{not json"), 400, "request body is not valid JSON"),
        (client.get("/nowhere"), 404, "no route GET /nowhere"),
        (client.get("/games?split=test"), 400, "unknown split 'test'"),
    ]
    for (status, body), expected_status, fragment in cases:
        assert status == expected_status, body
        assert fragment in body["error"], body
    assert client.post("/close", {"id": session}) == (200, {"id": session, "closed": True})
    status, body = client.post("/reset", {"id": session, "game": expert["game"]})
    assert status == 404 and "it may have been closed" in body["error"]


def test_clean_feedback_drops_only_the_arrival_location():
    assert clean_feedback("You arrive at loc 23. On the shelf 1, you see nothing.") == "On the shelf 1, you see nothing."
    assert clean_feedback("Nothing happens.") == "Nothing happens."
    assert clean_feedback("You pick up the apple 1. You arrive at loc 2. x") == "You pick up the apple 1. You arrive at loc 2. x"
    assert task_type_of("train/pick_two_obj_and_place-Apple-None-Fridge-1/trial_T1") == "pick_two_obj_and_place"
    assert task_type_of("train/whatever/trial") == "unknown"


def test_the_command_line_announces_its_port_and_rejects_a_missing_data_dir(data_dir):
    package = Path(__file__).resolve().parents[1]
    environment = {**os.environ, "PYTHONPATH": str(package)}
    failed = subprocess.run(
        [sys.executable, "-m", "dreamgym_alfworld_server", "--data-dir", "/nonexistent/alfworld"],
        capture_output=True, text=True, env=environment, timeout=60,
    )
    assert failed.returncode == 2
    assert "ALFWorld data directory /nonexistent/alfworld does not exist" in failed.stderr
    process = subprocess.Popen(
        [sys.executable, "-m", "dreamgym_alfworld_server", "--data-dir", data_dir, "--port", "0"],
        stdout=subprocess.PIPE, text=True, env=environment,
    )
    try:
        line = json.loads(process.stdout.readline())
        assert line["event"] == "listening" and line["host"] == "127.0.0.1" and line["port"] > 0
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0


def _loaded_planner_copies() -> set[str]:
    """The copies of Fast Downward's ``libdownward.so`` mapped into this process (the
    in-process server's): TextWorld loads one per game, from a temporary folder."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return {line.split()[-2] for line in maps if "libdownward" in line}


def test_a_closed_game_hands_its_copy_of_the_planner_library_to_the_next(client):
    # Every copy is a 33 MB file deleted at once but kept on disk while mapped: a server that
    # loaded one per game would fill the disk over hundreds of games.
    def play_three(first: int) -> None:
        sessions = []
        for index in range(first, first + 3):
            session = client.post("/create")[1]["id"]
            status, reset = client.post("/reset", {"id": session, "game": index, "split": "valid_seen"})
            assert status == 200, reset
            sessions.append(session)
        for session in sessions:
            assert client.post("/close", {"id": session})[0] == 200

    play_three(0)
    mapped = _loaded_planner_copies()
    play_three(3)
    play_three(6)
    assert _loaded_planner_copies() == mapped
