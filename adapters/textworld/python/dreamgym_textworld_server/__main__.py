"""Starts the server: ``python -m dreamgym_textworld_server --data-dir DIR [--port N]``.

Prints one JSON line ``{"event": "listening", "host": ..., "port": ...}`` on stdout once it
accepts connections (with ``--port 0`` that is how a caller learns the port), then serves
until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time


def watch_parent(parent_pid: int) -> None:
    """Exits the process once the launcher is gone, so that a crashed Node.js process leaves
    no orphaned engine behind (SIGKILL gives the launcher no chance to stop us)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dreamgym_textworld_server", description=__doc__)
    parser.add_argument("--data-dir", required=True, help="folder with games/train/, games/valid/, games/test/")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    parser.add_argument("--parent-pid", type=int, default=None,
                        help="exit when this process is no longer our parent (the launcher died)")
    args = parser.parse_args(argv)

    # Imported here so that --help works without the engine installed.
    from .server import make_server

    try:
        server = make_server(args.data_dir, args.host, args.port, quiet=not args.verbose)
    except (FileNotFoundError, OSError) as error:
        print(f"dreamgym_textworld_server: {error}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]

    def stop(_signum, _frame):
        # shutdown() waits for serve_forever() to return, so it must run on another thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.parent_pid is not None:
        watch_parent(args.parent_pid)
    try:
        print(json.dumps({"event": "listening", "host": host, "port": port}), flush=True)
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
