"""Starts and stops `dreamgym serve` as a child process, for tests and examples in Python.

The command is the built CLI (`node packages/cli/dist/bin.js`), or what the DREAMGYM_CLI
environment variable names (e.g. `node --import tsx packages/cli/src/bin.ts` to run the
sources in one process, so that SIGTERM reaches the server itself). The server prints `... listening on http://127.0.0.1:PORT ...` on stdout once
ready; its JSON-line logs go to a file so a failure can show them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
_LISTENING = re.compile(r"listening on (http://\S+)")


def dreamgym_command() -> list[str]:
    """The `dreamgym` command line: $DREAMGYM_CLI, else the built CLI of this repository."""
    override = os.environ.get("DREAMGYM_CLI", "").strip()
    if override:
        return shlex.split(override)
    built = REPOSITORY_ROOT / "packages" / "cli" / "dist" / "bin.js"
    if not built.is_file():
        raise RuntimeError(
            f"{built} does not exist: build the CLI first (npx turbo run build --filter=@dreamgym/cli... "
            "--filter=@dreamgym/server), or set DREAMGYM_CLI to a dreamgym command line."
        )
    return ["node", str(built)]


def data_directory(domain: str = "alfworld") -> str:
    """$DREAMGYM_DATA_DIR/<domain>, or a RuntimeError saying what to set."""
    root = os.environ.get("DREAMGYM_DATA_DIR", "").strip()
    if not root:
        raise RuntimeError(
            "DREAMGYM_DATA_DIR is not set: set it to the shared data directory (e.g. "
            f"DREAMGYM_DATA_DIR=../shared/data) so that $DREAMGYM_DATA_DIR/{domain} holds the {domain} data."
        )
    directory = os.path.join(os.path.abspath(root), domain)
    if not os.path.isdir(directory):
        raise RuntimeError(f"{directory} does not exist: DREAMGYM_DATA_DIR={root} does not hold the {domain} data.")
    return directory


class ServeProcess:
    """A running `dreamgym serve`; `stop()` sends SIGTERM and waits for the checkpoint."""

    def __init__(self, arguments: list[str], timeout_s: float = 180.0) -> None:
        self.log_file = tempfile.NamedTemporaryFile(prefix="dreamgym-serve-", suffix=".log", delete=False)
        self.command = [*dreamgym_command(), "serve", *arguments]
        self.process = subprocess.Popen(
            self.command,
            cwd=REPOSITORY_ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log_file,
            text=True,
        )
        self.stdout: list[str] = []
        ready = threading.Event()
        self.url: str | None = None

        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.stdout.append(line)
                match = _LISTENING.search(line)
                if match and self.url is None:
                    self.url = match.group(1)
                    ready.set()
            ready.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout_s
        while not ready.wait(0.2):
            if time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"dreamgym serve did not start within {timeout_s} s.\n{self.logs()}")
        if self.url is None:
            raise RuntimeError(f"dreamgym serve exited with {self.process.wait()} before listening.\n{self.logs()}")

    def status(self) -> dict:
        """GET /dreamgym/status: episodes, curriculum and buffer counts."""
        with urllib.request.urlopen(f"{self.url}/dreamgym/status", timeout=30) as response:
            return json.loads(response.read())

    def logs(self, tail: int = 40) -> str:
        self.log_file.flush()
        text = Path(self.log_file.name).read_text(encoding="utf-8", errors="replace")
        return "\n".join(["$ " + " ".join(self.command), *self.stdout, *text.splitlines()[-tail:]])

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, then the exit code (the server finishes steps in flight and checkpoints)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise RuntimeError(f"dreamgym serve did not stop within {timeout_s} s.\n{self.logs()}")
        self._reader.join(timeout=5)
        return self.process.returncode
