"""Where the embedded model lives: the model cache the set-up step and `dreamgym model pull`
fill (`$DREAMGYM_MODEL_DIR`, else `$XDG_CACHE_HOME/dreamgym/models`, else
`~/.cache/dreamgym/models`)."""

from __future__ import annotations

import os
from pathlib import Path


def default_model_path() -> Path:
    """The embedded SmolLM2-135M-Instruct Q4_1 GGUF in the model cache."""
    base = os.environ.get("DREAMGYM_MODEL_DIR", "").strip() or os.path.join(
        os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache"), "dreamgym", "models"
    )
    return Path(base) / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
