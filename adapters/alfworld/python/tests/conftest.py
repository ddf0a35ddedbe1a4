"""Fixtures for the ALFWorld server tests: the real data directory and one real server,
started in-process on a free port and shared by the module's tests (the engine is slow to
load, so tests share it)."""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture(scope="session")
def data_dir() -> str:
    root = os.environ.get("DREAMGYM_DATA_DIR", "").strip()
    if not root:
        pytest.fail(
            "DREAMGYM_DATA_DIR is not set: set it to the shared data directory "
            "(e.g. DREAMGYM_DATA_DIR=../shared/data) so that $DREAMGYM_DATA_DIR/alfworld holds "
            "the ALFWorld game files."
        )
    directory = os.path.join(root, "alfworld")
    if not os.path.isdir(os.path.join(directory, "train")):
        pytest.fail(f"{directory}/train does not exist: DREAMGYM_DATA_DIR={root} does not hold the ALFWorld data.")
    return directory


@pytest.fixture(scope="session")
def expert(data_dir: str) -> dict:
    """The first expert trajectory whose game file is in the data directory."""
    with open(os.path.join(data_dir, "expert_trajectories.jsonl"), encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if os.path.isfile(os.path.join(data_dir, record["game"], "game.tw-pddl")):
                return record
    pytest.fail("no expert trajectory of expert_trajectories.jsonl has its game file in the data directory")


class Client:
    """A minimal JSON client: returns (status, body) and never raises on HTTP errors."""

    def __init__(self, base: str) -> None:
        self.base = base

    def request(self, method: str, path: str, body: object = None, raw: bytes | None = None) -> tuple[int, object]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def get(self, path: str) -> tuple[int, object]:
        return self.request("GET", path)

    def post(self, path: str, body: object = None) -> tuple[int, object]:
        return self.request("POST", path, body if body is not None else {})


@pytest.fixture(scope="session")
def client(data_dir: str):
    from dreamgym_alfworld_server.server import make_server

    server = make_server(data_dir, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield Client(f"http://{host}:{port}")
    server.shutdown()
    server.server_close()
