"""HTTP server for the TextWorld engine (the session protocol of the ALFWorld server of
``@dreamgym/alfworld``, so that both read alike).

Routes (JSON bodies; errors answer ``{"error": message}`` with a 4xx/5xx status):

- ``GET  /health``                 ``{"status": "ok", "sessions": n, "data_dir", "versions"}``
- ``POST /create``                 ``{"id": n}``: a new session
- ``POST /reset {id, game, split?, max_steps?, expert_plan?}``
      ``game`` is ``<split>/<name>`` (``games/<split>/<name>.z8`` of the data directory) or an
      index into the sorted games of ``split`` (default ``train``). Answers the step payload
      below plus ``id`` and ``info``: the game's ``objective``, ``recipe`` (the cookbook's
      text), ``ingredients`` (``[name, cooking, cutting]``), ``walkthrough`` and generation
      ``settings``. ``expert_plan: true`` adds the quest tracker's winning commands from the
      current state to every answer.
- ``POST /step {id, action}``      ``{observation, available_actions, reward, done, won, lost,
      truncated, steps, score, max_score, game, admissible, expert_plan?}``: reward is 1 once
      the game is won, else 0; ``done`` when won, lost or after ``max_steps`` (default 50)
      actions (then ``truncated``).
- ``GET  /games?split=train``      the split's games in index order
- ``POST /close {id}``             ends the session

Observations are the engine's text as it prints it (banner, prompt and status line included);
the TypeScript state mapper cleans them. Engine calls are serialised by one lock; run several
servers to play episodes in parallel.
"""

from __future__ import annotations

import json
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from urllib.parse import parse_qs, urlsplit

from .engine import Episode, TextworldGame
from .games import SPLITS, GameCatalog, GameNotFound

DEFAULT_MAX_STEPS = 50
MAX_BODY_BYTES = 1 << 20


class RequestError(Exception):
    """A request the server refuses, with the HTTP status to answer."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class Session:
    def __init__(self, session_id: int) -> None:
        self.id = session_id
        self.game: TextworldGame | None = None
        self.episode: Episode | None = None


class TextworldService:
    """The protocol's operations, independent of HTTP (the handler only decodes and encodes)."""

    def __init__(self, data_dir: str) -> None:
        self.catalog = GameCatalog(data_dir)
        self._sessions: dict[int, Session] = {}
        self._next_id = 0
        self._registry_lock = threading.Lock()
        self._engine_lock = threading.Lock()

    def _session(self, body: dict) -> Session:
        raw = body.get("id")
        if isinstance(raw, str) and raw.strip().isdigit():
            raw = int(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`id` must be a session id (an integer from POST /create); got {raw!r}")
        with self._registry_lock:
            session = self._sessions.get(raw)
        if session is None:
            raise RequestError(HTTPStatus.NOT_FOUND, f"no session with id {raw}: create one with POST /create (it may have been closed)")
        return session

    def health(self) -> dict:
        with self._registry_lock:
            sessions = len(self._sessions)
        return {
            "status": "ok",
            "sessions": sessions,
            "data_dir": self.catalog.data_dir,
            "versions": {name: version(name) for name in ("textworld", "jericho")},
        }

    def create(self) -> dict:
        with self._registry_lock:
            session_id = self._next_id
            self._next_id += 1
            self._sessions[session_id] = Session(session_id)
        return {"id": session_id}

    def reset(self, body: dict) -> dict:
        session = self._session(body)
        if "game" not in body:
            raise RequestError(HTTPStatus.BAD_REQUEST, "`game` is required: '<split>/<name>' or an index into the split's sorted games")
        split = body.get("split", "train")
        if split not in SPLITS:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`split` must be one of {', '.join(SPLITS)}; got {split!r}")
        max_steps = body.get("max_steps", DEFAULT_MAX_STEPS)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`max_steps` must be a positive integer; got {max_steps!r}")
        expert = body.get("expert_plan", False)
        if not isinstance(expert, bool):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`expert_plan` must be true or false; got {expert!r}")
        try:
            name, path = self.catalog.resolve(body["game"], split)
        except ValueError as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(error)) from error
        except GameNotFound as error:
            raise RequestError(HTTPStatus.NOT_FOUND, str(error)) from error
        with self._engine_lock:
            game = session.game
            if game is None or game.path != path or game.expert != expert:
                if game is not None:
                    game.close()
                session.game = None
                session.episode = None
                game = TextworldGame(name, path, expert)
                session.game = game
            session.episode = game.reset(max_steps)
        return {"id": session.id, **session.episode.payload(), "info": session.episode.info}

    def step(self, body: dict) -> dict:
        session = self._session(body)
        action = body.get("action")
        if not isinstance(action, str):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`action` must be a string command; got {action!r}")
        episode, game = session.episode, session.game
        if episode is None or game is None:
            raise RequestError(HTTPStatus.CONFLICT, f"session {session.id} has no episode: POST /reset first")
        if episode.done:
            raise RequestError(HTTPStatus.CONFLICT, f"the episode of session {session.id} has finished: POST /reset to start another")
        with self._engine_lock:
            admissible = game.step(episode, action)
        return {**episode.payload(), "admissible": admissible}

    def games(self, query: dict) -> list[str]:
        try:
            return self.catalog.games(query.get("split", "train"))
        except GameNotFound as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(error)) from error

    def close(self, body: dict) -> dict:
        session = self._session(body)
        with self._registry_lock:
            self._sessions.pop(session.id, None)
        with self._engine_lock:
            if session.game is not None:
                session.game.close()
        return {"id": session.id, "closed": True}


class Handler(BaseHTTPRequestHandler):
    server_version = "dreamgym-textworld"
    protocol_version = "HTTP/1.1"
    service: TextworldService  # set on the subclass made by make_server
    quiet = True

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        if not self.quiet:
            super().log_message(format, *args)

    def _send(self, status: HTTPStatus, payload: object) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"request body of {length} bytes is over the {MAX_BODY_BYTES}-byte limit")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"request body is not valid JSON: {error}") from error
        if not isinstance(body, dict):
            raise RequestError(HTTPStatus.BAD_REQUEST, "request body must be a JSON object")
        return body

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        service = self.service
        try:
            route = (method, url.path.rstrip("/") or "/")
            if route == ("GET", "/health"):
                result: object = service.health()
            elif route == ("POST", "/create"):
                self._body()
                result = service.create()
            elif route == ("POST", "/reset"):
                result = service.reset(self._body())
            elif route == ("POST", "/step"):
                result = service.step(self._body())
            elif route == ("POST", "/close"):
                result = service.close(self._body())
            elif route == ("GET", "/games"):
                result = service.games(query)
            else:
                raise RequestError(HTTPStatus.NOT_FOUND, f"no route {method} {url.path}; see GET /health and the protocol in server.py")
        except RequestError as error:
            self._send(error.status, {"error": str(error)})
            return
        except Exception as error:  # the engine failed: say so, keep serving other sessions
            traceback.print_exc()
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"TextWorld engine error: {type(error).__name__}: {error}"})
            return
        self._send(HTTPStatus.OK, result)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")


def make_server(data_dir: str, host: str = "127.0.0.1", port: int = 0, quiet: bool = True) -> ThreadingHTTPServer:
    """A ready (not yet serving) server; ``port`` 0 picks a free port (see ``server_address``)."""
    service = TextworldService(data_dir)
    handler = type("TextworldHandler", (Handler,), {"service": service, "quiet": quiet})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
