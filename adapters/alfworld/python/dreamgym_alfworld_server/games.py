"""Where the game files are: a data directory holding ``<split>/<task>/<trial>/game.tw-pddl``.

A game is named either by its path relative to the data directory (``train/<task>/<trial>``,
with or without the trailing ``/game.tw-pddl``) or by its index into the sorted list of the
games of one split.
"""

from __future__ import annotations

import os
import threading

GAME_FILE = "game.tw-pddl"
SPLITS = ("train", "valid_seen", "valid_unseen")


class GameNotFound(Exception):
    """The game asked for is not in the data directory."""


class GameCatalog:
    """Resolves game names to game files inside one data directory (read-only, cached)."""

    def __init__(self, data_dir: str) -> None:
        real = os.path.realpath(data_dir)
        if not os.path.isdir(real):
            raise FileNotFoundError(
                f"ALFWorld data directory {data_dir} does not exist. Pass the folder that holds "
                f"train/, valid_seen/ and valid_unseen/ (e.g. $DREAMGYM_DATA_DIR/alfworld)."
            )
        self.data_dir = real
        self._splits: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def games(self, split: str) -> list[str]:
        """Sorted relative paths (``<split>/<task>/<trial>``) of the split's game files."""
        if split not in SPLITS:
            raise GameNotFound(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        with self._lock:
            cached = self._splits.get(split)
            if cached is None:
                cached = self._scan(split)
                self._splits[split] = cached
            return list(cached)

    def _scan(self, split: str) -> list[str]:
        root = os.path.join(self.data_dir, split)
        found: list[str] = []
        for directory, _subdirectories, files in os.walk(root):
            if GAME_FILE in files:
                found.append(os.path.relpath(directory, self.data_dir).replace(os.sep, "/"))
        return sorted(found)

    def resolve(self, game: object, split: str = "train") -> tuple[str, str]:
        """Returns ``(relative name, absolute game file)`` for an index or a relative path."""
        if isinstance(game, bool) or not isinstance(game, (int, str)):
            raise ValueError(
                "`game` must be an integer index into the split's sorted games or a path "
                f"relative to the data directory such as 'train/<task>/<trial>'; got {game!r}"
            )
        if isinstance(game, int):
            games = self.games(split)
            if not 0 <= game < len(games):
                raise GameNotFound(
                    f"game index {game} is out of range: split {split!r} has {len(games)} games "
                    f"in {self.data_dir} (indices 0..{len(games) - 1})"
                )
            name = games[game]
            return name, os.path.join(self.data_dir, name, GAME_FILE)
        name = game.strip().strip("/")
        if name.endswith("/" + GAME_FILE):
            name = name[: -len(GAME_FILE) - 1]
        if not name or os.path.isabs(game):
            raise GameNotFound(
                f"game {game!r} must be a path relative to the data directory, e.g. 'train/<task>/<trial>'"
            )
        path = os.path.realpath(os.path.join(self.data_dir, name, GAME_FILE))
        if not path.startswith(self.data_dir + os.sep):
            raise GameNotFound(f"game {game!r} points outside the data directory {self.data_dir}")
        if not os.path.isfile(path):
            raise GameNotFound(f"no game file {GAME_FILE} for game {game!r} in {self.data_dir}")
        return os.path.relpath(os.path.dirname(path), self.data_dir).replace(os.sep, "/"), path
