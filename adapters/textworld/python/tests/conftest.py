"""The server package is imported from the folder above (as the TypeScript connector runs it)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
