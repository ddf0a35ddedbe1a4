"""One `dreamgym model serve` process (the CLI, the real local model) for the module's tests:
started on a free port on 127.0.0.1, stopped with SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="session")
def server_url() -> str:
    if not (ROOT / "node_modules" / "tsx").exists():
        pytest.fail(f"{ROOT / 'node_modules' / 'tsx'} is missing: run `npm ci` at the repository root first.")
    # tsx as a loader in one process, not the tsx CLI: the CLI relays SIGTERM to a child and
    # SIGKILLs it (exit 143) when the child does not acknowledge within 30 ms, which a loaded
    # machine can miss.
    process = subprocess.Popen(
        ["node", "--import", "tsx", str(ROOT / "packages" / "cli" / "src" / "bin.ts"), "model", "serve",
         "--port", "0", "--concurrency", "2", "--context-size", "1024", "--quiet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: dict[str, str] = {}
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+/v1)", line)
            if match:
                found["url"] = match.group(1)
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(120) or "url" not in found:
        process.kill()
        errors = process.stderr.read() if process.stderr else ""
        pytest.fail(f"dreamgym model serve did not start: {errors[-2000:]}")
    yield found["url"]
    process.send_signal(signal.SIGTERM)
    try:
        assert process.wait(30) == 0, "model serve did not exit cleanly on SIGTERM"
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
