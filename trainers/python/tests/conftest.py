"""Shared fixtures of the trainer's tests: the package on the path, and the embedded model
(SmolLM2-135M-Instruct Q4_1 from the model cache the set-up step fills)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TRAINER_DIRECTORY = Path(__file__).resolve().parents[1]
if str(TRAINER_DIRECTORY) not in sys.path:
    sys.path.insert(0, str(TRAINER_DIRECTORY))


@pytest.fixture(scope="session")
def model_path() -> Path:
    from dreamgym_trainer.model_path import default_model_path

    path = default_model_path()
    if not path.is_file():
        pytest.fail(
            f"{path} is missing: run `bash scripts/setup.sh` (or `dreamgym model pull smollm2-135m-instruct`), "
            "or set DREAMGYM_MODEL_DIR to the folder that holds smollm2-135m-instruct/."
        )
    return path
