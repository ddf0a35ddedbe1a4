"""HTTP server for the ALFWorld engine in the AgentGym ALFWorld protocol.

Routes (JSON bodies; errors answer ``{"error": message}`` with a 4xx/5xx status, where
AgentGym answers 200 with the same body, so AgentGym clients that look for ``error`` work):

- ``GET  /health``                      ``{"status": "ok", "sessions": n, "data_dir", "versions"}``
- ``POST /create``                      ``{"id": n}``: a new session
- ``POST /reset {id, game, split?, max_steps?, expert_plan?, handcoded_expert?, seed?, world_type?}``
      ``game`` is an index into the sorted games of ``split`` (default ``train``) or a path
      relative to the data directory (``train/<task>/<trial>``); answers the step payload
      below plus ``id``. ``expert_plan: true`` adds the planner's plan from the current state
      to every answer. ``handcoded_expert: true`` adds ``expert_action``: the next command of
      ALFWorld's handcoded expert (the policy behind ALFWorld's expert demonstrations), or
      null with ``expert_failure`` once it gives up; it tracks the commands actually played,
      and ``seed`` (default 0) seeds its random choices. ``world_type`` is AgentGym's; only
      ``Text`` is served.
- ``POST /step {id, action}``           ``{observation, reward, done, won, truncated,
      available_actions, admissible, steps, game, task_type, expert_plan?}``; reward is 1 once
      the game is won, else 0; ``done`` when won or after ``max_steps`` (default 50) actions.
- ``GET  /available_actions?id=n``      the admissible commands (a JSON list)
- ``GET  /observation?id=n``            the current observation (a JSON string)
- ``GET  /detail?id=n``                 the session's current episode payload
- ``GET  /games?split=train``           the split's games in index order
- ``POST /close {id}``                  ends the session

Observations are the engine's text as in ALFWorld's expert data: the ``You arrive at loc N.``
prefix removed (as AgentGym does), the ``-= Welcome to TextWorld, ALFRED! =-`` banner kept at
reset (AgentGym drops it; the TypeScript state mapper strips it).

The engine (fast-downward through ctypes) is not known to be thread-safe, so engine calls are
serialised by one lock; run several servers to play episodes in parallel.
"""

from __future__ import annotations

import json
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from urllib.parse import parse_qs, urlsplit

from .engine import AlfworldGame, Episode
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
        self.game: AlfworldGame | None = None
        self.episode: Episode | None = None


class AlfworldService:
    """The protocol's operations, independent of HTTP (the handler only decodes and encodes)."""

    def __init__(self, data_dir: str) -> None:
        self.catalog = GameCatalog(data_dir)
        self._sessions: dict[int, Session] = {}
        self._next_id = 0
        self._registry_lock = threading.Lock()
        self._engine_lock = threading.Lock()

    # -- helpers -----------------------------------------------------------------------
    def _session(self, body_or_query: dict, field: str = "id") -> Session:
        raw = body_or_query.get(field)
        if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
            raw = int(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`{field}` must be a session id (an integer from POST /create); got {raw!r}")
        with self._registry_lock:
            session = self._sessions.get(raw)
        if session is None:
            raise RequestError(HTTPStatus.NOT_FOUND, f"no session with id {raw}: create one with POST /create (it may have been closed)")
        return session

    # -- operations --------------------------------------------------------------------
    def health(self) -> dict:
        with self._registry_lock:
            sessions = len(self._sessions)
        return {
            "status": "ok",
            "sessions": sessions,
            "data_dir": self.catalog.data_dir,
            "versions": {name: version(name) for name in ("alfworld", "textworld")},
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
            raise RequestError(HTTPStatus.BAD_REQUEST, "`game` is required: an index into the split's sorted games or a path such as 'train/<task>/<trial>'")
        split = body.get("split", "train")
        if split not in SPLITS:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`split` must be one of {', '.join(SPLITS)}; got {split!r}")
        world_type = body.get("world_type", "Text")
        if world_type != "Text":
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`world_type` {world_type!r} is not served: this server runs the text engine only ('Text')")
        max_steps = body.get("max_steps", DEFAULT_MAX_STEPS)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`max_steps` must be a positive integer; got {max_steps!r}")
        expert = body.get("expert_plan", False)
        if not isinstance(expert, bool):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`expert_plan` must be true or false; got {expert!r}")
        handcoded = body.get("handcoded_expert", False)
        if not isinstance(handcoded, bool):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`handcoded_expert` must be true or false; got {handcoded!r}")
        seed = body.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"`seed` must be an integer; got {seed!r}")
        try:
            name, path = self.catalog.resolve(body["game"], split)
        except ValueError as error:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(error)) from error
        except GameNotFound as error:
            raise RequestError(HTTPStatus.NOT_FOUND, str(error)) from error
        with self._engine_lock:
            game = session.game
            if game is None or game.path != path or game.expert != expert or game.handcoded != handcoded:
                if game is not None:
                    game.close()
                session.game = None
                session.episode = None
                game = AlfworldGame(name, path, expert, handcoded)
                session.game = game
            session.episode = game.reset(max_steps, seed)
        return {"id": session.id, **session.episode.payload()}

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

    def episode(self, query: dict) -> Episode:
        session = self._session(query)
        if session.episode is None:
            raise RequestError(HTTPStatus.CONFLICT, f"session {session.id} has no episode: POST /reset first")
        return session.episode

    def games(self, query: dict) -> list[str]:
        split = query.get("split", "train")
        try:
            return self.catalog.games(split)
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
    server_version = "dreamgym-alfworld"
    protocol_version = "HTTP/1.1"
    service: AlfworldService  # set on the subclass made by make_server
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
            if route == ("GET", "/"):
                result: object = "This is environment AlfWorld."
            elif route == ("GET", "/health"):
                result = service.health()
            elif route == ("POST", "/create"):
                self._body()
                result = service.create()
            elif route == ("POST", "/reset"):
                result = service.reset(self._body())
            elif route == ("POST", "/step"):
                result = service.step(self._body())
            elif route == ("POST", "/close"):
                result = service.close(self._body())
            elif route == ("GET", "/available_actions"):
                result = service.episode(query).admissible
            elif route == ("GET", "/observation"):
                result = service.episode(query).observation
            elif route == ("GET", "/detail"):
                result = service.episode(query).payload()
            elif route == ("GET", "/games"):
                result = service.games(query)
            else:
                raise RequestError(HTTPStatus.NOT_FOUND, f"no route {method} {url.path}; see GET /health and the protocol in server.py")
        except RequestError as error:
            self._send(error.status, {"error": str(error)})
            return
        except Exception as error:  # the engine failed: say so, keep serving other sessions
            traceback.print_exc()
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"ALFWorld engine error: {type(error).__name__}: {error}"})
            return
        self._send(HTTPStatus.OK, result)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")


def make_server(data_dir: str, host: str = "127.0.0.1", port: int = 0, quiet: bool = True) -> ThreadingHTTPServer:
    """A ready (not yet serving) server; ``port`` 0 picks a free port (see ``server_address``)."""
    service = AlfworldService(data_dir)
    handler = type("AlfworldHandler", (Handler,), {"service": service, "quiet": quiet})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
