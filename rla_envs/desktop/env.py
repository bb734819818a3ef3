"""OSWorldEnv: OSWorld's desktop tasks on a real Linux desktop, as a Gymnasium env (``rla/OSWorld-v0``)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from rla_envs.core.env import TaskEnv, Transition
from rla_envs.core.errors import InvalidTask, ResetNeeded, TaskNotFound
from rla_envs.core.spaces import PrintableText, is_printable_text
from rla_envs.core.task import Task
from rla_envs.desktop.actions import MAX_CODE_CHARS, Action, parse_action

__all__ = ["OSWorldEnv", "DEFAULT_WAIT_SECONDS", "WAIT_ACTION_SECONDS", "MAX_TREE_CHARS"]

DEFAULT_WAIT_SECONDS = 0.1
"""Pause after a pyautogui action before the screen is read (OSWorld pauses 2 s)."""
WAIT_ACTION_SECONDS = 1.0
"""How long the ``WAIT`` action waits."""
MAX_TREE_CHARS = 500_000
"""The accessibility tree is cut to this many characters (the observation space's limit)."""
MAX_INSTRUCTION_CHARS = 10_000
DEFAULT_SCREEN_SIZE = (1920, 1080)


def _printable(text: str, limit: int) -> str:
    """``text`` with unprintable characters turned into spaces, cut to ``limit`` characters."""
    text = text[:limit]
    if is_printable_text(text):
        return text
    return "".join(ch if ch.isprintable() or ch in "\n\t" else " " for ch in text)


class OSWorldEnv(TaskEnv):
    """Operate a Linux desktop to do an OSWorld task; scored by OSWorld's evaluator when the agent is done.

    ## Description
    Each task is an OSWorld task JSON (``rla_envs.desktop.osworld.tasks``): setup steps (download files,
    launch or open apps), an instruction and an evaluator. A desktop session (Xvfb, openbox, AT-SPI,
    mousepad, LibreOffice, xterm and a controller server speaking OSWorld's HTTP API) runs through a
    provider: ``"local"`` (a process group on this machine) or ``"docker"`` (a container). ``reset`` brings
    the session back to its initial state, runs the task's setup steps and observes the screen.
    The default task set is the bundled original tasks (``rla_envs.desktop.tasks``).

    ## Action Space
    ``PrintableText`` (up to 20,000 characters): pyautogui code (optionally in a fenced block), run inside
    the session with ``pyautogui`` and ``time`` in scope; or ``WAIT``, ``DONE`` or ``FAIL``. OSWorld's
    computer_13 dicts (``{"action_type": "CLICK", "parameters": {"x": 5, "y": 9}}``, or their JSON text) are
    accepted too and translated to pyautogui (``rla_envs.desktop.actions``). An action that cannot be used
    (does not compile, unknown computer_13 type, off-screen coordinates, or code that raised in the
    session, ran past ``action_timeout`` or ended its process, e.g. ``os._exit``) gives
    ``info["invalid_action"] = True`` and ``info["action_error"]`` says why. The code runs in a process of
    its own that is stopped when it overruns and replaced on every reset; scroll amounts beyond 500
    clicks are clamped.

    ## Observation Space
    ``Dict(screenshot=Box(0, 255, (H, W, 3), uint8), accessibility_tree=PrintableText,
    instruction=PrintableText)``: the screen as RGB pixels, OSWorld's accessibility tree XML (``""`` when
    ``accessibility_tree=False`` or when the tree could not be read in time; cut to 500,000 characters) and the
    task's instruction.

    ## Rewards
    0.0 on every step until the episode ends; then OSWorld's score for the task, in [0, 1] (``evaluate``:
    postconfig, getters, metrics). ``won`` is ``score >= 1``. Infeasible tasks score 1 only when the agent
    says ``FAIL``.

    ## Starting State
    ``reset(options={"task": Task | dict | id})`` plays that task (an id is the Task id or the OSWorld id);
    without one, a task is drawn from the task set with ``self.np_random`` (same seed, same task). A task
    this env cannot run (unsupported step, getter or metric, or a file the cache lacks) is refused with
    ``NotRunnable`` listing every reason, before the session is touched.

    ## Episode End
    Terminated on ``DONE`` or ``FAIL`` (the task is evaluated); truncated after ``max_steps`` actions (the
    task is evaluated too, as OSWorld does, and ``info["evaluated_on"]`` says ``"truncation"``). Truncated
    too, without a score, when the session stops answering (an action killed its controller): the
    observation is then a black screen and the next ``reset`` starts a fresh session.

    ## Info
    The base keys (``task_id``, ``instruction``, ``won``, ``step``, ``invalid_action``) and ``osworld_id``,
    ``app``, ``action_kind`` (``code``, ``WAIT``, ``DONE``, ``FAIL``, ``invalid``), ``action_source``
    (``pyautogui``, ``special``, ``computer_13``), ``action_error``, ``score`` (None until evaluated),
    ``evaluated_on`` (``DONE``, ``FAIL``, ``truncation`` or None) and ``evaluation_error`` (a getter or
    metric that could not produce a score: the reward is then 0.0 and ``score`` None). ``reset()``'s info adds
    ``reset_wait``: how long it waited for the setup's windows (``seconds``, ``expected_window``, ``windows``,
    ``settled``; None with ``reset_wait_seconds=0``).

    ## Expert
    ``expert_action()`` returns the next step of the task's scripted solution (``rla_solution``), or
    ``DONE`` past its end.

    ## Arguments
    * ``tasks``: tasks to play instead of the bundled set (Tasks, task dicts, or OSWorld JSON dicts).
    * ``provider``: ``"local"`` (default), ``"docker"``, or a ready ``DesktopProvider`` (not closed by the
      env); ``provider_options``: keyword arguments for ``make_provider``.
    * ``cache_dir``: the OSWorld file cache for tasks that download files (``FileCache``); bundled
      tasks need none.
    * ``max_steps`` (15), ``screen_size`` (width, height; default: a ready provider's ``screen_size``, else
      ``(1920, 1080)``; the env asks the provider it makes for this size), ``accessibility_tree`` (True),
      ``wait_seconds`` (0.1: pause after each pyautogui action), ``action_timeout`` (60 s),
      ``reset_wait_seconds`` (20: the most ``reset()`` waits for the windows its setup opened to be mapped and
      drawn, :mod:`rla_envs.desktop.settle`; 0: no wait),
      ``render_mode`` (``"rgb_array"`` or ``"ansi"``).

    ## Version History
    * v0: initial version.
    """

    family = "desktop"
    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 1}

    def __init__(
        self,
        tasks: Iterable[Task | Mapping[str, Any]] | None = None,
        *,
        provider: Any = "local",
        provider_options: Mapping[str, Any] | None = None,
        cache_dir: str | None = None,
        max_steps: int = 15,
        screen_size: tuple[int, int] | None = None,
        accessibility_tree: bool = True,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        action_timeout: float = 60.0,
        reset_wait_seconds: float = 20.0,
        render_mode: str | None = None,
    ):
        from rla_envs.desktop.osworld.cache import FileCache
        from rla_envs.desktop.providers.base import PROVIDERS, DesktopProvider

        if screen_size is None:  # a ready provider knows its screen; else OSWorld's 1920x1080
            screen_size = getattr(provider, "screen_size", None) or DEFAULT_SCREEN_SIZE
        try:
            width, height = (int(v) for v in screen_size)
        except (TypeError, ValueError):
            raise ValueError(f"screen_size must be (width, height) in pixels, got {screen_size!r}") from None
        if width < 1 or height < 1:
            raise ValueError(f"screen_size must be (width, height) in pixels, got {screen_size!r}")
        if reset_wait_seconds < 0:
            raise ValueError(f"reset_wait_seconds must be >= 0 (0: no wait), got {reset_wait_seconds}")
        if wait_seconds < 0 or action_timeout <= 0:
            raise ValueError(f"wait_seconds must be >= 0 and action_timeout > 0, got {wait_seconds}, "
                             f"{action_timeout}")
        if isinstance(provider, str):
            if provider not in PROVIDERS:
                raise ValueError(f"provider must be one of {sorted(PROVIDERS)} or a DesktopProvider, got {provider!r}")
        elif not isinstance(provider, DesktopProvider):
            raise ValueError(f"provider must be one of {sorted(PROVIDERS)} or a DesktopProvider, "
                             f"got {type(provider).__name__}")
        elif provider_options:
            raise ValueError("provider_options apply when the env makes its provider; pass them to your provider")
        tasks = None if tasks is None else [self._as_task(t) for t in tasks]
        super().__init__(tasks, max_steps=max_steps, max_action_length=MAX_CODE_CHARS, render_mode=render_mode)
        self.screen_size = (width, height)
        self.use_accessibility_tree = bool(accessibility_tree)
        self.wait_seconds = float(wait_seconds)
        self.action_timeout = float(action_timeout)
        self.reset_wait_seconds = float(reset_wait_seconds)
        self.cache = FileCache(cache_dir)
        self._provider_spec = provider
        self._provider_options = dict(provider_options or {})
        self._provider: DesktopProvider | None = provider if isinstance(provider, DesktopProvider) else None
        self._owns_provider = self._provider is None
        self.observation_space = spaces.Dict({
            "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
            "accessibility_tree": PrintableText(max_length=MAX_TREE_CHARS),
            "instruction": PrintableText(max_length=MAX_INSTRUCTION_CHARS),
        })
        self.action_space = PrintableText(max_length=MAX_CODE_CHARS)
        self._last_obs: dict[str, Any] | None = None
        self._last: dict[str, Any] = {}
        self._raw: dict[str, Any] = {}  # the running task's OSWorld JSON and app (set by _begin)
        # The episode's session: a session that dies mid-episode truncates it (a new one starts on reset only)
        self._episode_client = None
        self._app = ""

    # ----------------------------------------------------------------- tasks
    def default_tasks(self) -> Sequence[Task]:
        """The bundled original tasks."""
        from rla_envs.desktop.tasks import bundled_tasks

        return bundled_tasks()

    @staticmethod
    def _as_task(value: Any) -> Any:
        """A raw OSWorld JSON dict becomes a Task; Tasks, task dicts and ids pass through."""
        if isinstance(value, Mapping) and "spec" not in value and "evaluator" in value:
            from rla_envs.desktop.osworld.tasks import load_task

            return load_task(value)
        return value

    def _coerce_task(self, value: Any) -> Task:
        return super()._coerce_task(self._as_task(value))

    def get_task(self, task_id: str) -> Task:
        """The task with this Task id or OSWorld id from the task set."""
        try:
            return super().get_task(task_id)
        except TaskNotFound:
            for task in self.tasks:
                if task.meta.get("osworld_id") == task_id:
                    return task
            raise

    # ----------------------------------------------------------------- session
    @property
    def provider(self):
        """The desktop provider (made on first use from ``provider`` and ``provider_options``)."""
        if self._provider is None:
            from rla_envs.desktop.providers.base import provider_class

            cls = provider_class(self._provider_spec)
            options = dict(self._provider_options)
            if "screen_size" in inspect.signature(cls).parameters and "screen_size" not in options:
                options["screen_size"] = self.screen_size
            self._provider = cls(**options)
        return self._provider

    @property
    def client(self):
        """The running session's controller client (boots the session on first use)."""
        return self.provider.start()

    # ----------------------------------------------------------------- gymnasium API
    def _begin(self, task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
        """Refuse a task this env cannot run (every reason), else reset the session, run its setup, observe."""
        from rla_envs.desktop.osworld.errors import NotRunnable
        from rla_envs.desktop.osworld.runnable import not_runnable_reasons
        from rla_envs.desktop.osworld.setup import run_steps
        from rla_envs.desktop.osworld.tasks import osworld_json

        raw = osworld_json(task)
        reasons = not_runnable_reasons(raw, cache=self.cache, has_app=self.provider.has_app)
        if reasons:
            raise NotRunnable(str(raw.get("id")), reasons)
        self.provider.reset()  # first: a session that died or wedged is replaced here
        client = self._episode_client = self.client
        run_steps(client, raw.get("config") or [], cache=self.cache, task_id=str(raw["id"]))
        settled = self._wait_until_drawn(client, raw.get("config") or [])
        self._raw, self._app = raw, str(task.meta.get("app", ""))
        self._last = self._fresh_info(kind=None, source=None)
        observation = self._observe(task.instruction)
        return observation, {**self._last, "reset_wait": settled}

    def _wait_until_drawn(self, client, steps: list[Any]) -> dict[str, Any] | None:
        """Wait (at most ``reset_wait_seconds``) until the setup's windows are mapped and the screen holds still
        (:mod:`rla_envs.desktop.settle`); what the wait found, for ``info["reset_wait"]`` (None: no wait)."""
        from rla_envs.desktop.client import ControllerError
        from rla_envs.desktop.osworld.runnable import program_of
        from rla_envs.desktop.settle import expects_window, wait_until_drawn

        if not self.reset_wait_seconds:
            return None

        def window_count() -> int:
            try:
                reply = client.execute(["wmctrl", "-l"], timeout=10)
            except ControllerError:
                return 0
            return len((reply.get("output") or "").splitlines())

        settled = wait_until_drawn(client.screenshot_array, window_count,
                                   expect_window=expects_window(steps, program_of), timeout=self.reset_wait_seconds)
        return settled.as_info()

    def _play(self, action: Any) -> Transition:
        """Run the action; evaluate the task when the agent ends the episode or at the step limit."""
        from rla_envs.desktop.client import ControllerError

        parsed = parse_action(action, screen_size=self.screen_size)
        info = self._fresh_info(kind=parsed.kind, source=parsed.source)
        error = info["action_error"] = self._perform(parsed)
        ended, truncated = parsed.ends_episode, not parsed.ends_episode and self.at_step_limit
        if ended or truncated:
            info["evaluated_on"] = parsed.kind if ended else "truncation"
            last_action = parsed.kind if ended else (parsed.code or None)
            info["score"], info["evaluation_error"] = self._evaluate(last_action)
        try:
            observation = self._observe(self.task.instruction)
        except ControllerError as exc:  # the action (or something) ended the session: the episode cannot go on
            observation = self._blank_observation(self.task.instruction)
            lost = f"the desktop session stopped answering ({exc}); the episode is truncated and reset() starts a " \
                   "fresh session"
            error = info["action_error"] = f"{error}; {lost}" if error else lost
            truncated = not ended
            info["evaluation_error"] = info["evaluation_error"] or "the desktop session stopped answering"
        self._last = info
        won = info["score"] is not None and info["score"] >= 1.0
        return Transition(observation, won=won, lost=ended and not won, invalid_action=error is not None, info=info,
                          truncated=truncated, reward=float(info["score"] or 0.0))

    def _action_problem(self, action: Any) -> str | None:
        """None: :func:`~rla_envs.desktop.actions.parse_action` judges every action (computer_13 dicts included)."""
        return None

    def render(self):
        if self._last_obs is None:
            return None
        if self.render_mode == "rgb_array":
            return self._last_obs["screenshot"].copy()
        if self.render_mode == "ansi":
            return f"Task: {self._last_obs['instruction']}\n\n{self._last_obs['accessibility_tree']}"
        return None

    def close(self) -> None:
        """Stop the desktop session when the env made its provider (a provider passed in is left running)."""
        if self._provider is not None and self._owns_provider:
            self._provider.close()
            self._provider = None
        super().close()

    def expert_action(self) -> str:
        """The next step of the task's scripted solution (``DONE`` past its end)."""
        from rla_envs.desktop.tasks import solution_steps

        if self.task is None:
            raise ResetNeeded("expert_action() needs a running episode; call env.reset() first")
        steps = solution_steps(self.task)
        return steps[self._step_count] if self._step_count < len(steps) else "DONE"

    # ----------------------------------------------------------------- helpers
    def _perform(self, parsed: Action) -> str | None:
        """Carry out a code or WAIT action; return the problem text when the action could not be used."""
        from rla_envs.desktop.client import ControllerError

        if parsed.kind == "invalid":
            return parsed.problem
        if parsed.kind == "WAIT":
            time.sleep(WAIT_ACTION_SECONDS)
        if parsed.kind != "code":
            return None
        try:
            reply = self._episode_client.run_pyautogui(parsed.code, timeout=self.action_timeout)
        except ControllerError as exc:
            return f"the action could not be run: {exc}"
        if self.wait_seconds:
            time.sleep(self.wait_seconds)
        if reply.get("status") != "success":
            return f"the code raised in the session: {str(reply.get('error') or reply)[:2000]}"
        return None

    def _evaluate(self, last_action: str | None) -> tuple[float | None, str | None]:
        """OSWorld's score for the session's state, or (None, reason) when no score could be made."""
        from rla_envs.desktop.client import ControllerError
        from rla_envs.desktop.osworld.errors import EvaluationError, SetupFailed
        from rla_envs.desktop.osworld.evaluator import evaluate

        try:
            score = float(evaluate(self._episode_client, self._raw, cache=self.cache, last_action=last_action))
        except (EvaluationError, SetupFailed, ControllerError) as exc:
            return None, f"{type(exc).__name__}: {exc}"
        return min(max(score, 0.0), 1.0), None

    def _observe(self, instruction: str) -> dict[str, Any]:
        client = self._episode_client
        screenshot = np.array(client.screenshot_array(), dtype=np.uint8, copy=True)
        expected = self.observation_space["screenshot"].shape
        if screenshot.shape != expected:
            raise InvalidTask(f"the desktop session's screen is {screenshot.shape[1]}x{screenshot.shape[0]} but the "
                              f"env was built with screen_size={self.screen_size}; make the provider's screen match "
                              "(provider_options) or pass its size as screen_size")
        tree = ""
        if self.use_accessibility_tree:
            from rla_envs.desktop.client import ControllerError

            try:
                tree = client.accessibility_tree()
            except ControllerError:  # a busy app can time the tree out; the screenshot still shows the screen
                tree = ""
        observation = {
            "screenshot": screenshot,
            "accessibility_tree": _printable(tree or "", MAX_TREE_CHARS),
            "instruction": _printable(instruction, MAX_INSTRUCTION_CHARS),
        }
        self._last_obs = observation
        return observation

    def _blank_observation(self, instruction: str) -> dict[str, Any]:
        """A black screen and no tree: what is seen of a session that stopped answering."""
        observation = {
            "screenshot": np.zeros(self.observation_space["screenshot"].shape, dtype=np.uint8),
            "accessibility_tree": "",
            "instruction": _printable(instruction, MAX_INSTRUCTION_CHARS),
        }
        self._last_obs = observation
        return observation

    def _fresh_info(self, *, kind: str | None, source: str | None) -> dict[str, Any]:
        return {"osworld_id": str(self._raw.get("id")), "app": self._app,
                "action_kind": kind, "action_source": source, "action_error": None, "score": None,
                "evaluated_on": None, "evaluation_error": None}

    def _current_info(self) -> dict[str, Any]:
        return dict(self._last)
