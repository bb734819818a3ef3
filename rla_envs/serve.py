"""Any text rla env as an OpenEnv server: ``python -m rla_envs.serve rla/AlfWorld-v0 --port 8000``.

OpenEnv (``openenv-core``) is how TRL and other trainers reach environments over HTTP and WebSocket: ``reset`` /
``step`` / ``state``, one env per WebSocket session. This module wraps a Gymnasium env made with ``gym.make`` in
OpenEnv's ``Environment`` interface and serves it with ``openenv-core``'s FastAPI app (``create_app``)::

    python -m rla_envs.serve rla/TextWorld-v0 --port 8000                    # loopback only
    RLA_SERVE_TOKEN=$(openssl rand -hex 16) python -m rla_envs.serve rla/Code-v0 --host 0.0.0.0

    from rla_envs.serve import RlaEnvClient, TextAction
    with RlaEnvClient("http://127.0.0.1:8000") as env:                       # token="..." when the server has one
        result = env.reset(seed=0)
        result = env.step(TextAction(text="look"))
        print(result.observation.text, result.reward, result.done, result.observation.info["won"])

* **Models**: :class:`TextAction` (``text``: the command, program or answer, as ``env.step`` takes it),
  :class:`TextObservation` (``text``, the env's ``info`` as JSON, ``truncated``; OpenEnv's ``reward`` and ``done`` =
  terminated or truncated), :class:`EpisodeState` (``episode_id``, ``step_count``, ``env_id``, ``task_id``).
  ``reset`` takes ``seed`` and ``options`` (a task dict for ``options={"task": ...}``, validated by the env like any
  task); what the client sends is data: it reaches the env only through ``reset`` and ``step``.
* **Sessions**: each WebSocket session gets its own env (``--max-sessions``, default 4); env calls are serialised by
  one lock, since textworld's PDDL engine is not thread-safe and OpenEnv runs each session in its own thread.
* **Access**: loopback (127.0.0.1) by default, where requests that a web browser sends (an ``Origin`` header, or a
  ``Host`` that is not a loopback name) are refused, so a web page cannot drive the env. Bound to any other address
  the server needs a token (``--token`` or ``RLA_SERVE_TOKEN``), checked on every HTTP request and WebSocket handshake
  (``?token=`` or ``Authorization: Bearer``); a request without it gets 401, a WebSocket handshake 403.
* **Confinement**: the env runs as it does under ``gym.make`` (``rla/Code-v0`` runs programs in its sandbox).

Needs ``pip install "rla[serve]"`` (openenv-core, uvicorn). Text envs only (AlfWorld, TextWorld, Code); the desktop
env's observations are screenshots.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import json
import os
import sys
import threading
import uuid
from typing import Any
from urllib.parse import parse_qs, quote

from rla_envs.core.errors import MissingDependency
from rla_envs.core.files import jsonable

try:
    from openenv.core import EnvClient
    from openenv.core.client_types import StepResult
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
    from pydantic import Field
except ImportError as exc:  # the module is the server: without openenv-core it cannot do anything
    raise MissingDependency(f"rla_envs.serve needs openenv-core ({exc}); install it with: pip install \"rla[serve]\"") \
        from exc

__all__ = ["TextAction", "TextObservation", "EpisodeState", "GymnasiumEnvironment", "EnvFactory", "build_app",
           "RlaEnvClient", "TOKEN_ENV", "main"]

TOKEN_ENV = "RLA_SERVE_TOKEN"
_ENV_CALLS = threading.Lock()  # textworld's engine is not thread-safe; OpenEnv runs each session in a thread


class TextAction(Action):
    """What ``env.step`` takes: a command (text games), a program or an answer (code)."""

    text: str = Field(..., description="the action text, as env.step takes it")


class TextObservation(Observation):
    """The env's observation text, its ``info`` (JSON-able) and whether the episode was truncated."""

    text: str = Field(default="", description="the observation")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict, JSON-able")
    truncated: bool = Field(default=False, description="the episode ended by running out of steps")


class EpisodeState(State):
    """OpenEnv's state plus which env and task the session plays."""

    env_id: str = Field(default="", description="the Gymnasium id served")
    task_id: str | None = Field(default=None, description="the task of the current episode")


class GymnasiumEnvironment(Environment):
    """One rla env (``gym.make(env_id, **env_kwargs)``) behind OpenEnv's ``Environment`` interface."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session gets its own env; env calls are serialised by _ENV_CALLS

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None):
        # OpenEnv builds and closes a session's env on its event loop: the env itself is made at the first reset,
        # in the session's worker thread, so a slow gym.make (or another session's step) never stalls the server
        super().__init__()
        self._env_id, self._env_kwargs, self._env = env_id, dict(env_kwargs or {}), None
        self._state = EpisodeState(episode_id=None, step_count=0, env_id=env_id)
        self._ready = False

    def _made(self):
        if self._env is None:
            import gymnasium as gym

            import rla_envs  # noqa: F401  (registers the rla/ ids)

            self._env = gym.make(self._env_id, **self._env_kwargs)
        return self._env

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextObservation:
        options = kwargs.get("options")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"reset options must be a JSON object (e.g. {{'task': {{...}}}}), got {type(options).__name__}")
        with _ENV_CALLS:
            observation, info = self._made().reset(seed=seed, options=options)
        self._ready = True
        self._state = EpisodeState(episode_id=episode_id or uuid.uuid4().hex, step_count=0, env_id=self._env_id,
                                   task_id=_task_id(info))
        return _observation(observation, 0.0, False, False, info)

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        if not self._ready:
            raise RuntimeError("step before reset: call reset() first (and again after an episode ends)")
        with _ENV_CALLS:
            observation, reward, terminated, truncated, info = self._env.step(action.text)
        self._state.step_count += 1
        self._ready = not (terminated or truncated)
        return _observation(observation, float(reward), bool(terminated), bool(truncated), info)

    @property
    def state(self) -> EpisodeState:
        return self._state

    def close(self) -> None:
        env, self._env = self._env, None
        if env is not None:  # off the event loop: waiting for the lock there would stall every session
            threading.Thread(target=_close_env, args=(env,), name="rla-serve-close", daemon=True).start()


def _close_env(env) -> None:
    with _ENV_CALLS:
        env.close()


def _task_id(info: dict[str, Any]) -> str | None:
    task_id = info.get("task_id") if isinstance(info, dict) else None
    return str(task_id) if task_id is not None else None


def _observation(observation: Any, reward: float, terminated: bool, truncated: bool,
                 info: dict[str, Any]) -> TextObservation:
    if not isinstance(observation, str):
        raise TypeError(f"rla_envs.serve serves text envs; this env's observation is a {type(observation).__name__}")
    return TextObservation(text=observation, reward=reward, done=terminated or truncated, truncated=truncated,
                           info=jsonable(info))


class EnvFactory:
    """Makes one :class:`GymnasiumEnvironment` per session (a picklable class, not a closure)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None):
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs or {})

    def __call__(self) -> GymnasiumEnvironment:
        return GymnasiumEnvironment(self.env_id, self.env_kwargs)


class _Gate:
    """An ASGI wrapper in front of OpenEnv's app. With a token: only requests and WebSocket handshakes carrying it
    pass. Without one (a loopback server): nothing a web browser sends passes, since a page the user visits could
    otherwise reach a loopback port (WebSockets have no CORS) or rebind a name to 127.0.0.1: a request with an
    ``Origin`` header, or whose ``Host`` is not a loopback name, is refused. Trainers' clients send neither."""

    def __init__(self, app, token: str | None):
        self.app, self._token = app, token.encode() if token else None

    def _allowed(self, scope) -> bool:
        headers = {name.lower(): value for name, value in scope.get("headers", [])}
        if self._token is None:
            host = headers.get(b"host", b"").decode("latin-1").rsplit(":", 1)[0].strip("[]")
            return b"origin" not in headers and (host == "localhost" or _loopback(host))
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        offered = [value.encode() for value in query.get("token", [])]
        authorization = headers.get(b"authorization", b"")
        if authorization.lower().startswith(b"bearer "):
            offered.append(authorization[7:].strip())
        return any(hmac.compare_digest(candidate, self._token) for candidate in offered)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or self._allowed(scope):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return None
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"detail": "refused: a token is missing or wrong, or '
                                                           b'the request came from a web page"}'})
        return None


def build_app(env_id: str, env_kwargs: dict[str, Any] | None = None, *, token: str | None = None,
              max_sessions: int = 4):
    """The ASGI app serving ``env_id``: OpenEnv's FastAPI app behind :class:`_Gate` (the token when ``token`` is given,
    else refusing what a web browser sends)."""
    from openenv.core.env_server.http_server import create_fastapi_app

    import rla_envs  # noqa: F401
    import gymnasium as gym

    if env_id not in gym.registry:
        raise KeyError(f"no env {env_id!r}; rla's text envs: rla/AlfWorld-v0, rla/TextWorld-v0, rla/Code-v0")
    app = create_fastapi_app(EnvFactory(env_id, env_kwargs), TextAction, TextObservation,
                             max_concurrent_envs=max_sessions)
    return _Gate(app, token)


class RlaEnvClient(EnvClient[TextAction, TextObservation, EpisodeState]):
    """OpenEnv's WebSocket client for a served rla env; ``token`` for a server that has one."""

    def __init__(self, base_url: str, *, token: str | None = None, **kwargs: Any):
        super().__init__(base_url, **kwargs)
        if token:
            self._ws_url += f"?token={quote(token, safe='')}"

    def _step_payload(self, action: TextAction) -> dict[str, Any]:
        return {"text": action.text}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TextObservation]:
        observation = TextObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                      done=payload.get("done", False))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> EpisodeState:
        return EpisodeState(**payload)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    """``python -m rla_envs.serve ENV_ID [--host H] [--port P] [--token T] [--max-sessions N] [--env-kwargs JSON]``."""
    parser = argparse.ArgumentParser(prog="python -m rla_envs.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("env_id", help="the Gymnasium id: rla/AlfWorld-v0, rla/TextWorld-v0 or rla/Code-v0")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback; others need a token)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--token", default=None, help=f"required on every request (default: ${TOKEN_ENV})")
    parser.add_argument("--max-sessions", type=int, default=4, help="concurrent WebSocket sessions (one env each)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object passed to gym.make (e.g. '{\"max_steps\": 30}')")
    args = parser.parse_args(argv)
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if not _loopback(args.host) and not token:
        parser.error(f"--host {args.host} is reachable from other machines: give a token (--token or ${TOKEN_ENV})")
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as exc:
        parser.error(f"--env-kwargs is not JSON ({exc})")
    if not isinstance(env_kwargs, dict):
        parser.error("--env-kwargs must be a JSON object")
    try:
        app = build_app(args.env_id, env_kwargs, token=token, max_sessions=args.max_sessions)
    except KeyError as exc:
        parser.error(str(exc.args[0]))
    import uvicorn

    print(f"[rla] serving {args.env_id} on http://{args.host}:{args.port} (OpenEnv: /reset /step /state /ws"
          f"{', token required' if token else ''})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
