"""Plays seeded random episodes on the TextWorld engine, with or without this package's
memoisation of the engine (``engine.py``), and records every observation, the admissible
commands and the win flag. Two runs that differ only in ``--memoised`` must record the same
episodes; their times give the memoisation's speed-up.

``python -m dreamgym_alfworld_server.playthrough --data-dir DIR [--memoised] [--games 4]
[--episodes 2] [--steps 15] [--seed 1]`` prints one JSON object: ``episodes`` (per episode:
the game and its steps) and ``seconds`` (the time spent loading, resetting and stepping).
Without ``--memoised`` nothing of this package's engine module is imported, so TextWorld runs
exactly as shipped.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

from .games import GameCatalog


def _record(state) -> list:
    """What a step shows: the feedback, the admissible commands and whether the game is won."""
    return [state.feedback, list(state["admissible_commands"]), bool(state["won"])]


def play(data_dir: str, memoised: bool, games: int, episodes: int, steps: int, seed: int) -> dict:
    if memoised:
        from . import engine  # noqa: F401 - importing it installs the memoisation
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

    catalog = GameCatalog(data_dir)
    chooser = random.Random(seed)
    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
    recorded = []
    seconds = 0.0
    # Spread the games over the split: neighbouring games are trials of one task.
    train = catalog.games("train")
    names = train[:: max(1, len(train) // games)][:games]
    for name in names:
        started = time.perf_counter()
        env = textworld.start(
            f"{catalog.data_dir}/{name}/game.tw-pddl",
            request_infos=infos,
            wrappers=[AlfredDemangler(), AlfredInfos],
        )
        seconds += time.perf_counter() - started
        for _ in range(episodes):
            started = time.perf_counter()
            state = env.reset()
            seconds += time.perf_counter() - started
            trace = [_record(state)]
            for _ in range(steps):
                action = chooser.choice(sorted(state["admissible_commands"]))
                started = time.perf_counter()
                state, _score, done = env.step(action)
                seconds += time.perf_counter() - started
                trace.append(_record(state))
                if done:
                    break
            recorded.append({"game": name, "steps": trace})
        env.close()
    return {"memoised": memoised, "episodes": recorded, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="the ALFWorld data directory (holds train/)")
    parser.add_argument("--memoised", action="store_true", help="install this package's engine memoisation first")
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=2, help="episodes per game (resets of one loaded game)")
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args(argv)
    result = play(options.data_dir, options.memoised, options.games, options.episodes, options.steps, options.seed)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
