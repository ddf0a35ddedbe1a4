"""ALFWorld's handcoded expert (``alfworld.agents.expert.HandCodedTWAgent``) on this engine.

It is the expert behind ALFWorld's train demonstrations (the ``expert_trajectories.jsonl``
a user of the public download does not get): a per-task-type policy that searches the
receptacles its priors favour, opens and closes what it looks into, takes the target object
and carries it through heat / cool / clean / light to its destination. Two things differ
between it and the game files this server plays, and this module bridges them:

- Task parameters. ``HandCodedAgent.reset`` reads ``traj_data.json`` beside the game file
  (ALFRED's ``pddl_params``). The full ALFWorld download has it; a data folder holding only
  ``game.tw-pddl`` files does not, so the parameters then come from the task folder's name,
  which ALFRED writes as ``<task_type>-<object>-<movable receptacle>-<receptacle or lamp>-<scene>``.
- Grammar. alfworld 0.4's expert speaks the newer ``move O to R``; the json_2.1.1 game files
  say ``put O in/on R``. The expert sees admissible commands in its own grammar and its
  answer is translated back.

The expert's random choices (which of several same-class objects to take, a random
admissible command when it would repeat itself) draw from a per-episode ``random.Random``
seeded by the caller, so one seed gives one trajectory.
"""

from __future__ import annotations

import json
import os
import random
import re

from alfworld.agents.expert import handcoded_expert as _handcoded
from alfworld.agents.expert.handcoded_expert import HandCodedAgentFailed, HandCodedAgentTimeout
from alfworld.agents.expert.handcoded_expert_tw import HandCodedTWAgent

_PUT = re.compile(r"^put (.+) in/on (.+)$")
_MOVE = re.compile(r"^move (.+) to (.+)$")
TASK_PARAMETER_FIELDS = ("object_target", "mrecep_target", "parent_target", "toggle_target", "object_sliced")


class ExpertGaveUp(Exception):
    """The handcoded expert ran out of steps or subgoals without winning the game."""


def to_expert_grammar(command: str) -> str:
    match = _PUT.match(command)
    return f"move {match[1]} to {match[2]}" if match else command


def to_game_grammar(command: str) -> str:
    match = _MOVE.match(command)
    return f"put {match[1]} in/on {match[2]}" if match else command


def task_parameters(game_file: str) -> dict:
    """ALFRED's ``pddl_params`` and ``task_type`` of a game: from ``traj_data.json`` beside the
    game file when there is one, else from the task folder's name."""
    trial = os.path.dirname(game_file)
    traj_data = os.path.join(trial, "traj_data.json")
    if os.path.isfile(traj_data):
        with open(traj_data, encoding="utf-8") as handle:
            data = json.load(handle)
        return {**data["pddl_params"], "task_type": data["task_type"]}
    folder = os.path.basename(os.path.dirname(trial))
    parts = folder.split("-")
    if len(parts) != 5:
        raise ValueError(
            f"cannot read the task parameters of {game_file}: there is no traj_data.json beside it and its "
            f"task folder {folder!r} is not named <task_type>-<object>-<movable receptacle>-<receptacle>-<scene>"
        )
    task_type, target, movable, receptacle, _scene = parts
    lamp = task_type == "look_at_obj_in_light"
    return {
        "task_type": task_type,
        "object_target": target,
        "mrecep_target": "" if movable == "None" else movable,
        "parent_target": "" if lamp else receptacle,
        "toggle_target": receptacle if lamp else "",
        "object_sliced": False,
    }


class HandcodedExpert:
    """One episode of the handcoded expert. ``start`` with the game's first feedback; then
    ``next_action`` for the command to play and ``played`` with the command that was played,
    once per step (the expert tracks its own state from the feedback and its last command)."""

    def __init__(self, game_file: str, seed: int, max_steps: int = 150) -> None:
        self.random = random.Random(seed)
        agent = HandCodedTWAgent(max_steps=max_steps)
        parameters = task_parameters(game_file)
        # HandCodedAgent.reset, with the parameters found above instead of traj_data.json only.
        objects = _handcoded.constants.OBJECTS
        agent.task_params = {key: value.lower() if value in objects else value for key, value in parameters.items()}
        agent.policy = agent.get_task_policy(agent.task_params)(agent.task_params, max_steps=max_steps)
        self._agent = agent
        self._last_action = ""

    def start(self, feedback: str) -> None:
        self._agent.observe(feedback)

    def next_action(self, state, admissible: list[str]) -> str:
        """The expert's next command in the game's grammar; ExpertGaveUp when it has none."""
        view = dict(state)
        view["admissible_commands"] = [to_expert_grammar(command) for command in admissible]
        saved = _handcoded.random
        _handcoded.random = self.random  # the module draws from `random.choice`
        try:
            action = self._act(view)
        except (HandCodedAgentTimeout, HandCodedAgentFailed) as error:
            raise ExpertGaveUp(type(error).__name__) from error
        finally:
            _handcoded.random = saved
        return to_game_grammar(action)

    def played(self, action: str) -> None:
        """Records the command the episode actually played (the expert's, or another)."""
        self._last_action = action

    def _act(self, view: dict) -> str:
        # HandCodedAgent.act, with the fallback's random choice drawn from this episode's stream.
        # The policy's state tracking recognises a placing command by the word "put" (it never
        # sees its own "move O to R" there), so it gets the last command in the game's grammar:
        # otherwise it would not drop what it placed and would keep placing it again.
        last_action = to_expert_grammar(self._last_action)
        action = self._agent.policy.act(view, self._last_action)
        if action == last_action or (last_action == "look" and action not in view["admissible_commands"]):
            return self.random.choice(view["admissible_commands"])
        return action
