"""The trainer worker's JSON-lines protocol, without a model: answers in order, one per request,
every failure an answer with its kind (the TypeScript client maps kinds to DreamGym errors), and
`shutdown` ends the stream. The model-backed methods run against the real SmolLM2 in the
TypeScript suites (`packages/llama/src/llm-policy*.test.ts`)."""

from __future__ import annotations

import io
import json
import sys

from dreamgym_trainer.worker import Worker, serve


def run(lines: list[str]) -> list[dict]:
    out = io.StringIO()
    serve(io.StringIO("".join(line + "\n" for line in lines)), out, Worker("cpu", None))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_health_before_start_and_shutdown_ends_the_stream():
    answers = run(
        [
            json.dumps({"id": 1, "method": "health"}),
            "",
            json.dumps({"id": 2, "method": "shutdown"}),
            json.dumps({"id": 3, "method": "health"}),
        ]
    )
    assert [answer["id"] for answer in answers] == [1, 2]
    health = answers[0]
    assert health["ok"] is True
    assert health["result"]["started"] is False
    assert health["result"]["protocol"] == 1
    assert answers[1] == {"id": 2, "ok": True, "result": {"bye": True}}


def test_every_failure_is_an_answer_with_its_kind_and_the_worker_keeps_serving():
    answers = run(
        [
            "{not json",
            json.dumps({"id": 5, "params": {}}),
            json.dumps({"id": 6, "method": "logprobs", "params": {"samples": []}}),
            json.dumps({"id": 7, "method": "start", "params": {"model": "/nonexistent/model.gguf"}}),
            json.dumps({"id": 8, "method": "health"}),
        ]
    )
    assert [answer["ok"] for answer in answers] == [False, False, False, False, True]
    malformed, no_method, not_started, missing_model, _ = answers
    assert malformed["id"] is None and malformed["error"]["kind"] == "invalid-request"
    assert no_method["id"] == 5 and "string `method`" in no_method["error"]["message"]
    assert not_started["id"] == 6 and not_started["error"]["kind"] == "not-started"
    assert missing_model["id"] == 7 and missing_model["error"]["kind"] == "model-file"
    assert "/nonexistent/model.gguf" in missing_model["error"]["message"]


def test_unknown_methods_after_start_are_invalid_requests():
    worker = Worker("cpu", None)
    worker.trainer = object()  # a started worker: the method check comes before any trainer call
    out = io.StringIO()
    serve(io.StringIO(json.dumps({"id": 1, "method": "fly"}) + "\n"), out, worker)
    (answer,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answer["ok"] is False
    assert answer["error"]["kind"] == "invalid-request"
    assert "unknown method 'fly'" in answer["error"]["message"]


def test_a_python_without_the_trainers_requirements_answers_python_module(monkeypatch):
    # As a Python without the requirements answers (the client then names the doctor step that
    # installs them): None in sys.modules makes their imports fail the same way, and the
    # worker's own modules that import them are loaded anew.
    for name in ("torch", "gguf"):
        monkeypatch.setitem(sys.modules, name, None)
    for name in [name for name in sys.modules if name.startswith("dreamgym_trainer.")]:
        if name != "dreamgym_trainer.worker":
            monkeypatch.delitem(sys.modules, name)
    answers = run(
        [
            json.dumps({"id": 1, "method": "start", "params": {"model": "m.gguf"}}),
            json.dumps({"id": 2, "method": "logprobs", "params": {"samples": []}}),
            json.dumps({"id": 3, "method": "health"}),
        ]
    )
    start, not_started, health = answers
    assert start["ok"] is False and start["error"]["kind"] == "python-module"
    assert "torch" in start["error"]["message"]
    # Other failures keep their kinds, and the worker keeps serving.
    assert not_started["error"]["kind"] == "not-started"
    assert health["ok"] is True
