"""Fixtures of the OpenEnv interop tests: `dreamgym serve` on the real ALFWorld data (a small
slice of it, so the replay buffer builds in seconds), started once per module."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dreamgym_serve_process import ServeProcess, data_directory  # noqa: E402


def serve(*extra: str) -> ServeProcess:
    try:
        data = data_directory("alfworld")
    except RuntimeError as error:
        pytest.fail(str(error))
    run_directory = tempfile.mkdtemp(prefix="dreamgym-interop-")
    return ServeProcess(
        [
            "--domain", "alfworld", "--data", data, "--port", "0", "--run-dir", run_directory,
            "--offline-limit", "300", "--train-tasks", "12", "--index", "flat",
            "--tasks-per-iteration", "2", "--rollouts-per-task", "2", "--max-steps", "12",
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def server():
    process = serve()
    yield process
    code = process.stop()
    assert code == 0, process.logs()


@pytest.fixture(scope="module")
def small_server():
    """A server that admits two sessions at a time."""
    process = serve("--max-sessions", "2")
    yield process
    assert process.stop() == 0, process.logs()


@pytest.fixture(scope="module")
def real_server():
    """The real ALFWorld engine (the adapter's connectReal) behind the same protocol."""
    process = serve("--real", "--max-steps", "4")
    yield process
    assert process.stop() == 0, process.logs()
