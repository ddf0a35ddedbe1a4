"""Shared fixtures of the trainer's tests: the package on the path, and the embedded model
(SmolLM2-135M-Instruct Q4_1 from the model cache the set-up step fills)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TRAINER_DIRECTORY = Path(__file__).resolve().parents[1]
if str(TRAINER_DIRECTORY) not in sys.path:
    sys.path.insert(0, str(TRAINER_DIRECTORY))


def _model_path() -> Path:
    base = os.environ.get("DREAMGYM_MODEL_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dreamgym", "models"
    )
    return Path(base) / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def model_path() -> Path:
    path = _model_path()
    if not path.is_file():
        pytest.fail(
            f"{path} is missing: run `bash scripts/setup.sh` (or `dreamgym model pull smollm2-135m-instruct`), "
            "or set DREAMGYM_MODEL_DIR to the folder that holds smollm2-135m-instruct/."
        )
    return path
