"""The BrowserGym side of the AX-tree benchmark maps a real page in the system Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]


def test_flattens_a_page_served_on_localhost(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(
        "<title>Bench</title><h1>Order</h1><label>Name <input></label><button>Place order</button>"
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/page.html"
    process = subprocess.Popen(
        [sys.executable, "-m", "dreamgym_browsergym_bench"],
        cwd=PYTHON_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert json.loads(process.stdout.readline())["ready"] is True
        process.stdin.write(json.dumps({"url": url, "repeats": 2, "settle_ms": 0}) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        assert "error" not in answer, answer
        assert "button 'Place order'" in answer["text"]
        assert "textbox 'Name'" in answer["text"]
        assert len(answer["ms"]) == 2 and all(ms > 0 for ms in answer["ms"])
        process.stdin.write("\n")
        process.stdin.flush()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
        server.shutdown()
