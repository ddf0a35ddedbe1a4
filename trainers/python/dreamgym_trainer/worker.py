"""The trainer worker: one `PolicyTrainer` behind a JSON-lines protocol on stdin/stdout.

    python -m dreamgym_trainer.worker [--device cpu|cuda] [--threads N]

Each request is one line `{"id": n, "method": "...", "params": {...}}`; each answer is one line
`{"id": n, "ok": true, "result": {...}}` or `{"id": n, "ok": false, "error": {"kind", "message",
"traceback"}}`, in request order. Logs go to stderr. stdout carries nothing but answers: library
output printed to stdout is redirected to stderr.

Methods: `start` (load the model; must come first), `health`, `generate`, `logprobs`, `update`, `imitate`,
`snapshot`, `release`, `reset_optimizer`, `save`, `load`, `load_adapter`, `save_adapter` (PEFT
LoRA folders), `export`, `shutdown`. Error kinds:
`invalid-request`, `not-started`, `checkpoint`, `model-file`, `out-of-memory`, `internal`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from typing import Any, Callable, TextIO

PROTOCOL_VERSION = 1


def _log(message: str) -> None:
    sys.stderr.write(f"[dreamgym-trainer] {message}\n")
    sys.stderr.flush()


class Worker:
    def __init__(self, device: str, threads: int | None):
        self.device = device
        self.threads = threads
        self.trainer = None
        self.started_at = time.time()
        self.requests = 0

    def _require_trainer(self):
        if self.trainer is None:
            raise NotStarted("call `start` before any other method")
        return self.trainer

    def handle(self, method: str, params: dict) -> Any:
        self.requests += 1
        if method == "health":
            return {
                "ok": True,
                "protocol": PROTOCOL_VERSION,
                "pid": os.getpid(),
                "started": self.trainer is not None,
                "device": self.device,
                "steps": 0 if self.trainer is None else self.trainer.steps,
                "snapshots": [] if self.trainer is None else sorted(self.trainer.snapshots),
                "uptimeSeconds": time.time() - self.started_at,
                "maxRssBytes": _max_rss_bytes(),
            }
        if method == "start":
            return self._start(params)
        if method == "shutdown":
            return {"bye": True}
        trainer = self._require_trainer()
        if method == "logprobs":
            return trainer.logprobs(params["samples"], params.get("weights"))
        if method == "update":
            return trainer.update(
                params["samples"],
                params["schedule"],
                params.get("loss"),
                params.get("maxGradNorm"),
                params.get("learningRate"),
            )
        if method == "imitate":
            return trainer.imitate(
                params["samples"], params["batches"], params.get("maxGradNorm"), params.get("learningRate")
            )
        if method == "snapshot":
            return trainer.snapshot(str(params["name"]))
        if method == "release":
            return trainer.release(str(params["name"]))
        if method == "reset_optimizer":
            return trainer.reset_optimizer()
        if method == "save":
            return trainer.save(str(params["directory"]), params.get("weights"))
        if method == "load":
            return trainer.load(str(params["directory"]), params.get("weights"))
        if method == "generate":
            return trainer.generate(params)
        if method == "load_adapter":
            return trainer.load_adapter(str(params["directory"]))
        if method == "save_adapter":
            return trainer.save_adapter(str(params["directory"]))
        if method == "export":
            return trainer.export(str(params["path"]), str(params.get("type", "lora")))
        raise InvalidRequest(f"unknown method {method!r}")

    def _start(self, params: dict) -> dict:
        import torch

        from .policy_model import PolicyTrainer
        from .trainer_options import TrainerOptions

        if self.trainer is not None:
            raise InvalidRequest("`start` was already called; start a new worker for another model")
        if self.threads:
            torch.set_num_threads(self.threads)
        options = TrainerOptions.from_json({**params, "device": params.get("device", self.device)})
        if not os.path.isfile(options.model):
            raise ModelFileMissing(f"model file {options.model} does not exist")
        self.trainer = PolicyTrainer(options, log=_log)
        return {"protocol": PROTOCOL_VERSION, **self.trainer.describe()}


class InvalidRequest(ValueError):
    kind = "invalid-request"


class NotStarted(RuntimeError):
    kind = "not-started"


class ModelFileMissing(FileNotFoundError):
    kind = "model-file"


def _max_rss_bytes() -> int:
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except Exception:  # resource is POSIX-only
        return 0


def _error_kind(error: BaseException) -> str:
    kind = getattr(error, "kind", None)
    if isinstance(kind, str):
        return kind
    if isinstance(error, ModuleNotFoundError):
        # This Python lacks a requirement (torch ...): the client says how to install them.
        return "python-module"
    if isinstance(error, MemoryError) or "out of memory" in str(error).lower():
        return "out-of-memory"
    try:
        # These modules import torch and gguf, which a Python without the requirements lacks:
        # its errors still get their kinds.
        from .gguf_io import GgufFormatError
        from .trainer_state import CheckpointMismatch
    except ImportError:
        GgufFormatError = CheckpointMismatch = ()  # noqa: N806 (no instance matches)
    if isinstance(error, CheckpointMismatch):
        return "checkpoint"
    if isinstance(error, (GgufFormatError, FileNotFoundError)):
        return "model-file"
    if isinstance(error, (ValueError, KeyError, TypeError)):
        return "invalid-request"
    return "internal"


def serve(stdin: TextIO, stdout: TextIO, worker: Worker, write: Callable[[str], None] | None = None) -> None:
    send = write or (lambda line: (stdout.write(line + "\n"), stdout.flush()))
    for line in stdin:
        if not line.strip():
            continue
        request_id: Any = None
        try:
            request = json.loads(line)
            request_id = request.get("id")
            method = request.get("method")
            if not isinstance(method, str):
                raise InvalidRequest("a request needs a string `method`")
            result = worker.handle(method, request.get("params") or {})
            send(json.dumps({"id": request_id, "ok": True, "result": result}, allow_nan=True))
            if method == "shutdown":
                return
        except Exception as error:  # every failure becomes an answer; the worker keeps serving
            kind = _error_kind(error)
            _log(f"{kind}: {error}")
            send(
                json.dumps(
                    {
                        "id": request_id,
                        "ok": False,
                        "error": {"kind": kind, "message": str(error), "traceback": traceback.format_exc()},
                    }
                )
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dreamgym_trainer.worker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="torch device: cpu (default) or cuda[:N]")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args(argv)
    if not (args.device == "cpu" or args.device.startswith("cuda")):
        parser.error(f"--device must be cpu or cuda[:N], got {args.device!r}")
    # Keep the protocol stream clean: anything a library prints goes to stderr.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    worker = Worker(args.device, args.threads)
    _log(f"ready (pid {os.getpid()}, device {args.device})")
    serve(sys.stdin, protocol, worker)
    return 0


if __name__ == "__main__":
    sys.exit(main())
