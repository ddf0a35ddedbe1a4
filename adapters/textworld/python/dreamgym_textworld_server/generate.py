"""Generates the cooking games of a data directory, deterministically, skipping games already
there: ``python -m dreamgym_textworld_server.generate --data-dir DIR --train 40 --valid 20
--test 20``.

Game ``i`` of a split is TextWorld's cooking challenge (``tw-make tw-cooking``) with a recipe
of ``1 + i % 4`` ingredients, all to be taken (``--take`` = ``--recipe``), seed
``SEED_BASE[split] + i``, and the food items of TextWorld's own ``train``/``valid``/``test``
split, so evaluation games cook food the training games never show. It is written as
``games/<split>/cooking-r<N>-s<seed>.z8`` and the ``.json`` TextWorld reads beside it. The
other settings (rooms, closed containers, cooking, cutting) are the same for every game of a
directory and kept in ``games/settings.json``; a directory made with other settings is
refused. Prints one JSON line per game, then a summary line."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from .games import GAMES_FOLDER, SPLITS

SEED_BASE = {"train": 0, "valid": 100_000, "test": 200_000}
SETTINGS_FILE = "settings.json"


def game_plan(split: str, index: int) -> tuple[str, int, int]:
    """``(name, recipe size, seed)`` of game ``index`` of ``split``."""
    recipe = 1 + index % 4
    seed = SEED_BASE[split] + index
    return f"cooking-r{recipe}-s{seed}", recipe, seed


def check_settings(data_dir: str, settings: dict) -> None:
    """Writes ``games/settings.json``, or refuses settings other than those already used."""
    path = os.path.join(data_dir, GAMES_FOLDER, SETTINGS_FILE)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as file:
            existing = json.load(file)
        if existing != settings:
            raise SystemExit(f"{path} records other generation settings ({existing}) than asked ({settings}): use another --data-dir, or the same settings")
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        json.dump(settings, file, indent=2, sort_keys=True)
        file.write("\n")


def make_game(folder: str, name: str, recipe: int, seed: int, split: str, settings: dict) -> None:
    """Generates and compiles one game into ``folder`` (``<name>.z8`` and ``<name>.json``)."""
    import textworld
    from textworld.challenges.tw_cooking import cooking

    with tempfile.TemporaryDirectory(dir=folder, prefix=".generating-") as scratch:
        options = textworld.GameOptions()
        options.seeds = seed
        options.path = os.path.join(scratch, f"{name}.z8")
        options.file_ext = ".z8"
        options.force_recompile = True
        game = cooking.make(
            {
                "recipe": recipe,
                "take": recipe,
                "go": settings["rooms"],
                "open": settings["open"],
                "cook": settings["cook"],
                "cut": settings["cut"],
                "drop": False,
                "recipe_seed": seed,
                "split": split,
            },
            options,
        )
        compiled = textworld.generator.compile_game(game, options)
        # The .json first: a .z8 without it is not a game (GameCatalog needs both).
        shutil.move(compiled[:-3] + ".json", os.path.join(folder, f"{name}.json"))
        shutil.move(compiled, os.path.join(folder, f"{name}.z8"))


def generate(data_dir: str, counts: dict[str, int], settings: dict, emit=print) -> dict:
    check_settings(data_dir, settings)
    created = skipped = 0
    for split in SPLITS:
        folder = os.path.join(data_dir, GAMES_FOLDER, split)
        os.makedirs(folder, exist_ok=True)
        for index in range(counts.get(split, 0)):
            name, recipe, seed = game_plan(split, index)
            started = time.perf_counter()
            exists = all(os.path.isfile(os.path.join(folder, f"{name}{ext}")) for ext in (".z8", ".json"))
            if not exists:
                make_game(folder, name, recipe, seed, split, settings)
                created += 1
            else:
                skipped += 1
            emit(json.dumps({
                "event": "game",
                "game": f"{split}/{name}",
                "split": split,
                "recipe": recipe,
                "seed": seed,
                "created": not exists,
                "seconds": round(time.perf_counter() - started, 3),
            }))
    summary = {"event": "done", "created": created, "skipped": skipped}
    emit(json.dumps(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dreamgym_textworld_server.generate", description=__doc__)
    parser.add_argument("--data-dir", required=True)
    for split, default in (("train", 40), ("valid", 20), ("test", 20)):
        parser.add_argument(f"--{split}", type=int, default=default, help=f"games of the {split} split (default {default})")
    parser.add_argument("--rooms", type=int, default=1, choices=[1, 6, 9, 12], help="rooms per game (tw-cooking --go; default 1)")
    parser.add_argument("--open", action=argparse.BooleanOptionalAction, default=True, help="containers start closed (default on)")
    parser.add_argument("--cook", action=argparse.BooleanOptionalAction, default=True, help="recipes ask to cook (default on)")
    parser.add_argument("--cut", action=argparse.BooleanOptionalAction, default=True, help="recipes ask to cut (default on)")
    args = parser.parse_args(argv)
    counts = {"train": args.train, "valid": args.valid, "test": args.test}
    if any(count < 0 for count in counts.values()):
        parser.error("game counts must not be negative")
    settings = {"challenge": "tw-cooking", "rooms": args.rooms, "open": args.open, "cook": args.cook, "cut": args.cut}
    generate(os.path.abspath(args.data_dir), counts, settings, emit=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
