"""One ALFWorld episode on the TextWorld PDDL engine, as ALFWorld's own text environment
sets it up: ``textworld.start`` on a ``game.tw-pddl`` file (which carries the ALFRED PDDL
domain and command grammar) with ALFWorld's ``AlfredDemangler`` (readable entity names such
as ``alarmclock 2``) and ``AlfredInfos`` wrappers."""

from __future__ import annotations

import copy
import functools
import re
import threading
import time
from dataclasses import dataclass, field

import fast_downward
import textworld
import textworld.logic as textworld_logic
from textworld.envs.pddl import textgen
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

from .handcoded_expert import ExpertGaveUp, HandcodedExpert

# TextWorld's PDDL engine loads a private copy of Fast Downward's ``libdownward.so`` (33 MB) for
# every game it opens (``fast_downward.load_lib``: a copy per game, because the planner keeps
# its task in global state), from a temporary folder it deletes at once, and never unloads it.
# A deleted copy stays mapped, so its disk space is only freed when the process exits: a server
# that opened hundreds of games filled the disk. Unloading a copy (``dlclose``) makes the
# interpreter crash at exit, so a closed game hands its copy to the next game instead; the
# server keeps as many copies as it ever had games open at once. Every game loads its own task
# into the copy it gets (as a reset of the same game does).
_spare_planner_libraries: list = []
_spare_planner_lock = threading.Lock()
_load_planner_library = fast_downward.load_lib


def _reuse_or_load_planner_library():
    with _spare_planner_lock:
        if _spare_planner_libraries:
            return _spare_planner_libraries.pop()
    return _load_planner_library()


fast_downward.load_lib = _reuse_or_load_planner_library

# Two pure computations dominate the engine's time, and TextWorld repeats both:
# - Translating a game's PDDL problem to the planner's SAS form (``fast_downward.pddl2sas``,
#   twice per state: plain and optimised for replanning). ``textworld.start`` translates the
#   game to load it, and every ``reset`` translates the same problem again.
# - Parsing strings with TatSu: every step parses the command template of every applicable
#   action, the feedback rule (``ContextSensitiveGrammar.derive``) and the conditions of the
#   grammar's rules (``Rule.parse_conjunctive_query``), from the same few hundred strings.
# Both are memoised here. A translation's task object is only read by the states built from
# it; a parse result is deep-copied for each caller, which may attach its own context to it.
# ``tests/test_engine_memoisation.py`` checks that episodes play out the same with and without
# this. Callers hold the server's engine lock, as the translator's global options require.
_translate_pddl = fast_downward.pddl2sas


@functools.lru_cache(maxsize=16)
def _memoised_pddl2sas(domain: str, problem: str, verbose: bool = False, optimize: bool = False):
    return _translate_pddl(domain, problem, verbose=verbose, optimize=optimize)


fast_downward.pddl2sas = _memoised_pddl2sas


def _memoise_parser(parse_and_convert):
    """``parse_and_convert(text, rule_name=..., trace=...)`` with its results kept per input."""

    @functools.lru_cache(maxsize=4096)
    def parsed(text: str, rule_name: str, trace: bool):
        return parse_and_convert(text, rule_name=rule_name, trace=trace)

    def memoised(text: str, rule_name: str, trace: bool = False):
        return copy.deepcopy(parsed(text, rule_name, trace))

    return memoised


textgen._parse_and_convert = _memoise_parser(textgen._parse_and_convert)
textworld_logic._parse_and_convert = _memoise_parser(textworld_logic._parse_and_convert)

NOTHING_HAPPENS = "Nothing happens."
_ARRIVAL = re.compile(r"^You arrive at loc \d+\. ")
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)


def clean_feedback(text: str) -> str:
    """The engine's text as ALFWorld's expert data and AgentGym show it: without the
    ``You arrive at loc N.`` prefix, whose number is an internal id that leaks nothing useful."""
    return _ARRIVAL.sub("", text, count=1)


def task_type_of(game: str) -> str:
    """The task type from a game name ``<split>/<type>-<objects>-<scene>/<trial>``."""
    parts = game.split("/")
    folder = parts[1] if len(parts) > 1 else parts[0]
    prefix = folder.split("-", 1)[0]
    return prefix if prefix in TASK_TYPES else "unknown"


@dataclass
class Episode:
    """State of one session's current episode."""

    game: str
    observation: str
    admissible: list[str]
    max_steps: int
    expert: bool
    steps: int = 0
    won: bool = False
    done: bool = False
    truncated: bool = False
    reward: float = 0.0
    expert_plan: list[str] | None = None
    handcoded: HandcodedExpert | None = None
    expert_action: str | None = None
    expert_failure: str | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def payload(self) -> dict:
        body = {
            "observation": self.observation,
            "available_actions": list(self.admissible),
            "reward": self.reward,
            "done": self.done,
            "won": self.won,
            "truncated": self.truncated,
            "steps": self.steps,
            "game": self.game,
            "task_type": task_type_of(self.game),
        }
        if self.expert:
            body["expert_plan"] = list(self.expert_plan or [])
        if self.handcoded is not None:
            body["expert_action"] = self.expert_action
            if self.expert_failure is not None:
                body["expert_failure"] = self.expert_failure
        return body

    def advance_handcoded(self, state) -> None:
        """Asks the handcoded expert for its next command in ``state`` (none once done)."""
        if self.handcoded is None or self.done:
            self.expert_action = None
            return
        try:
            self.expert_action = self.handcoded.next_action(state, list(state["admissible_commands"]))
        except ExpertGaveUp as error:
            self.expert_action = None
            self.expert_failure = f"ALFWorld's handcoded expert gave up ({error}) after {self.steps} steps"
        except Exception as error:  # noqa: BLE001 - a fault of the expert, not of the engine: this game has no demonstration
            self.expert_action = None
            self.expert_failure = f"ALFWorld's handcoded expert failed after {self.steps} steps: {type(error).__name__}: {error}"


class AlfworldGame:
    """A loaded game file; ``reset`` starts a fresh episode of it (loading is the slow part,
    so a session keeps its game loaded while it plays the same game again)."""

    def __init__(self, game: str, path: str, expert: bool, handcoded: bool = False) -> None:
        self.game = game
        self.path = path
        self.expert = expert
        self.handcoded = handcoded
        # policy_commands asks the PDDL planner for a plan from the current state after every
        # step: it costs time, so only sessions that asked for the expert plan pay for it.
        infos = textworld.EnvInfos(
            won=True,
            admissible_commands=True,
            policy_commands=expert,
            # ALFWorld's handcoded expert checks its subgoals against the world's facts.
            facts=handcoded,
            extras=["gamefile"],
        )
        started = time.perf_counter()
        self._env = textworld.start(path, request_infos=infos, wrappers=[AlfredDemangler(), AlfredInfos])
        self.load_seconds = time.perf_counter() - started

    def reset(self, max_steps: int, seed: int = 0) -> Episode:
        """A fresh episode; ``seed`` seeds the handcoded expert's random choices."""
        state = self._env.reset()
        episode = Episode(
            game=self.game,
            observation=clean_feedback(state.feedback),
            admissible=list(state["admissible_commands"]),
            max_steps=max_steps,
            expert=self.expert,
            expert_plan=list(state.get("policy_commands") or []) if self.expert else None,
        )
        if self.handcoded:
            episode.handcoded = HandcodedExpert(self.path, seed)
            episode.handcoded.start(state.feedback)
            episode.advance_handcoded(state)
        return episode

    def step(self, episode: Episode, action: str) -> bool:
        """Applies ``action`` to the episode; returns whether it was admissible."""
        admissible = action.strip() in episode.admissible
        state, _score, done = self._env.step(action)
        episode.steps += 1
        episode.observation = clean_feedback(state.feedback)
        episode.admissible = list(state["admissible_commands"])
        episode.won = bool(state["won"])
        episode.reward = 1.0 if episode.won else 0.0
        episode.truncated = not (episode.won or done) and episode.steps >= episode.max_steps
        episode.done = episode.won or bool(done) or episode.truncated
        if self.expert:
            episode.expert_plan = list(state.get("policy_commands") or [])
        if episode.handcoded is not None:
            episode.handcoded.played(action)
            episode.advance_handcoded(state)
        return admissible

    def close(self) -> None:
        """Closes the game and hands its copy of the planner library to the next game."""
        self._env.close()
        pddl_env = self._env.unwrapped
        library = getattr(pddl_env, "downward_lib", None)
        if library is not None:
            pddl_env.downward_lib = None
            with _spare_planner_lock:
                _spare_planner_libraries.append(library)
