"""One TextWorld episode: ``textworld.start`` on a generated ``.z8`` game (played by Jericho,
with TextWorld's ``TWInform7`` wrapper tracking the game's state from the ``.json`` beside it,
which gives the admissible commands, ``won``/``lost`` and the walkthrough)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import textworld

# Inform 7 understands more than the game's own verbs: `restart`, `quit`, `undo`, `save` ...
# leave the story waiting for a yes/no answer (every later command answers "Please answer yes
# or no.") or rewind it behind TextWorld's state tracker. Multi-object commands (`take all`,
# `take a and b`, `take a. take b`) play several actions in one step, which the tracker does
# not follow either. Such commands never reach the engine: they are answered here with what
# Inform says to an unknown verb, and count as a step.
UNKNOWN_VERB = "That's not a verb I recognise."
ONE_THING = "You can only do one thing at a time."
_MULTIPLE = re.compile(r"[.,;!?\"]|\b(all|everything|then|except|but|and)\b")


@dataclass
class Episode:
    """State of one session's current episode."""

    game: str
    observation: str
    admissible: list[str]
    max_steps: int
    max_score: int
    steps: int = 0
    score: int = 0
    won: bool = False
    lost: bool = False
    done: bool = False
    truncated: bool = False
    reward: float = 0.0
    expert_plan: list[str] | None = None
    info: dict = field(default_factory=dict)

    def payload(self) -> dict:
        body = {
            "observation": self.observation,
            "available_actions": list(self.admissible),
            "reward": self.reward,
            "done": self.done,
            "won": self.won,
            "lost": self.lost,
            "truncated": self.truncated,
            "steps": self.steps,
            "score": self.score,
            "max_score": self.max_score,
            "game": self.game,
        }
        if self.expert_plan is not None:
            body["expert_plan"] = list(self.expert_plan)
        return body


class TextworldGame:
    """A loaded game; ``reset`` starts a fresh episode of it (loading is the slow part, so a
    session keeps its game loaded while it plays the same game again)."""

    def __init__(self, game: str, path: str, expert: bool) -> None:
        self.game = game
        self.path = path
        self.expert = expert
        infos = textworld.EnvInfos(
            admissible_commands=True,
            won=True,
            lost=True,
            score=True,
            max_score=True,
            objective=True,
            verbs=True,
            # The quest tracker's winning policy from the current state (cheap for cooking games).
            policy_commands=expert,
            extras=["walkthrough", "recipe", "ingredients", "settings"],
        )
        started = time.perf_counter()
        self._env = textworld.start(path, request_infos=infos)
        self.load_seconds = time.perf_counter() - started
        self._verbs: set[str] = set()

    def reset(self, max_steps: int) -> Episode:
        state = self._env.reset()
        self._verbs = set(state["verbs"] or [])
        settings = state.get("extra.settings") or {}
        episode = Episode(
            game=self.game,
            observation=state.feedback,
            admissible=sorted(state["admissible_commands"]),
            max_steps=max_steps,
            max_score=int(state["max_score"] or 0),
            expert_plan=list(state["policy_commands"] or []) if self.expert else None,
        )
        episode.info = {
            "objective": state["objective"],
            "recipe": state.get("extra.recipe") or "",
            "ingredients": [list(entry) for entry in state.get("extra.ingredients") or []],
            "walkthrough": list(state.get("extra.walkthrough") or []),
            "settings": {key: settings.get(key) for key in ("recipe", "take", "go", "open", "cook", "cut", "split", "seed") if key in settings},
        }
        return episode

    def step(self, episode: Episode, action: str) -> bool:
        """Applies ``action`` to the episode; returns whether it was admissible."""
        command = " ".join(action.strip().lower().split())
        admissible = command in episode.admissible
        episode.steps += 1
        verb = command.split(" ", 1)[0] if command else ""
        if admissible or (verb in self._verbs and not _MULTIPLE.search(command)):
            state, _score, done = self._env.step(command)
            episode.observation = state.feedback
            episode.admissible = sorted(state["admissible_commands"])
            episode.score = int(state["score"] or 0)
            episode.won = bool(state["won"])
            episode.lost = bool(state["lost"])
            if self.expert:
                episode.expert_plan = list(state["policy_commands"] or [])
            ended = episode.won or episode.lost or bool(done)
        else:
            episode.observation = f"\n{UNKNOWN_VERB if verb not in self._verbs else ONE_THING}\n"
            ended = False
        episode.reward = 1.0 if episode.won else 0.0
        episode.truncated = not ended and episode.steps >= episode.max_steps
        episode.done = ended or episode.truncated
        return admissible

    def close(self) -> None:
        self._env.close()
