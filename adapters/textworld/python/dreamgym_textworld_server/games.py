"""The games of a data directory: ``games/<split>/<name>.z8`` (with TextWorld's ``<name>.json``
beside it, which the engine reads for the game's state, admissible commands and walkthrough).
A game is named ``<split>/<name>``."""

from __future__ import annotations

import os
import re

SPLITS = ("train", "valid", "test")
GAMES_FOLDER = "games"
_NAME = re.compile(r"^(train|valid|test)/[A-Za-z0-9._-]+$")


class GameNotFound(Exception):
    """A game or split the data directory does not hold."""


class GameCatalog:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = os.path.abspath(data_dir)
        if not os.path.isdir(self.data_dir):
            raise FileNotFoundError(f"TextWorld data directory {self.data_dir} does not exist: generate games with `python -m dreamgym_textworld_server.generate --data-dir {self.data_dir}`")

    def games(self, split: str) -> list[str]:
        """The split's games, sorted (``<split>/<name>``)."""
        if split not in SPLITS:
            raise GameNotFound(f"unknown split {split!r}: one of {', '.join(SPLITS)}")
        folder = os.path.join(self.data_dir, GAMES_FOLDER, split)
        if not os.path.isdir(folder):
            return []
        return sorted(f"{split}/{entry[:-3]}" for entry in os.listdir(folder) if entry.endswith(".z8"))

    def resolve(self, game: object, split: str = "train") -> tuple[str, str]:
        """``(name, path of the .z8 file)`` of a game given by name or index into ``split``."""
        if isinstance(game, bool) or not isinstance(game, (int, str)):
            raise ValueError(f"`game` must be a name such as 'train/<name>' or an index; got {game!r}")
        if isinstance(game, int):
            games = self.games(split)
            if not 0 <= game < len(games):
                raise GameNotFound(f"split {split} has {len(games)} games; index {game} is out of range")
            game = games[game]
        if not _NAME.match(game):
            raise ValueError(f"`game` must be '<split>/<name>' with split train, valid or test; got {game!r}")
        path = os.path.join(self.data_dir, GAMES_FOLDER, f"{game}.z8")
        if not os.path.isfile(path) or not os.path.isfile(path[:-3] + ".json"):
            raise GameNotFound(f"no game {game} in {self.data_dir} (expected {path} and its .json)")
        return game, path
