"""The engine's memoisation (PDDL translations and TatSu parses, ``engine.py``) changes how
fast the engine runs, never what it says: the same seeded random episodes, played through
TextWorld as shipped and through the memoised engine in separate processes, record the same
observations, admissible commands and win flags."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parents[1]


def _play(data_dir: str, memoised: bool) -> dict:
    command = [
        sys.executable,
        "-m",
        "dreamgym_alfworld_server.playthrough",
        "--data-dir",
        data_dir,
        "--games",
        "2",
        "--episodes",
        "2",
        "--steps",
        "12",
        "--seed",
        "3",
    ]
    if memoised:
        command.append("--memoised")
    finished = subprocess.run(command, cwd=PACKAGE_PARENT, capture_output=True, text=True, timeout=600, check=False)
    assert finished.returncode == 0, finished.stderr[-2000:]
    return json.loads(finished.stdout)


def test_memoised_engine_plays_the_same_episodes_as_textworld_as_shipped(data_dir):
    shipped = _play(data_dir, memoised=False)
    memoised = _play(data_dir, memoised=True)
    assert [episode["game"] for episode in shipped["episodes"]] == [episode["game"] for episode in memoised["episodes"]]
    # Each game is reset twice, so the second episode of a game starts from a memoised translation.
    assert len(shipped["episodes"]) == 4
    for expected, actual in zip(shipped["episodes"], memoised["episodes"]):
        assert len(actual["steps"]) == len(expected["steps"])
        for index, (expected_step, actual_step) in enumerate(zip(expected["steps"], actual["steps"])):
            assert actual_step == expected_step, f"{expected['game']} step {index} differs"
    # The episodes are long enough to exercise stepping, not only resets.
    assert sum(len(episode["steps"]) for episode in shipped["episodes"]) > 4 * 6
