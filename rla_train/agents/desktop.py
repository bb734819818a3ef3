"""The agent for desktop tasks (rla/OSWorld-v0): instruction + accessibility tree (+ screenshot) in, pyautogui out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rla_train.agents.base import ChatAgent
from rla_train.agents.parsing import ParsedAction, parse_desktop_action

__all__ = ["DesktopAgent"]

_SYSTEM = ("You control a Linux desktop with Python's pyautogui. Each turn you see the task and the screen's "
           "accessibility tree. Answer with pyautogui code in one ```python block, or with WAIT, DONE (the task is "
           "complete) or FAIL (the task cannot be done) alone on a line.")


class DesktopAgent(ChatAgent):
    """Operates a desktop: observations are dicts with ``instruction``, ``accessibility_tree`` and ``screenshot``.

    Args:
        vision: put the screenshot into the user turn as an image part (for vision-language models);
            text-only models get the accessibility tree alone.
        max_tree_chars: the accessibility tree is cut to this many characters.
        system_prompt, history_window: see :class:`~rla_train.agents.base.ChatAgent` (default window: 3 steps).
    """

    kind = "desktop"
    default_system_prompt = _SYSTEM
    default_history_window = 3

    def __init__(self, *, vision: bool = False, max_tree_chars: int = 6_000, **options: Any):
        if max_tree_chars < 0:
            raise ValueError(f"max_tree_chars must be >= 0, got {max_tree_chars}")
        super().__init__(**options)
        self.vision = bool(vision)
        self.max_tree_chars = int(max_tree_chars)

    def _screen(self, observation: Any, header: str) -> Any:
        if not isinstance(observation, Mapping):
            return f"{header}{str(observation).strip()}"
        tree = str(observation.get("accessibility_tree") or "")
        if len(tree) > self.max_tree_chars:
            tree = tree[: self.max_tree_chars] + "\n... (tree cut)"
        text = f"{header}Accessibility tree:\n{tree}" if tree else f"{header}(no accessibility tree)"
        screenshot = observation.get("screenshot")
        if self.vision and screenshot is not None:
            return [{"type": "image", "image": screenshot}, {"type": "text", "text": text}]
        return text

    def first_message(self, observation: Any, info: Mapping[str, Any]) -> Any:
        """The task instruction and the screen."""
        instruction = observation.get("instruction") if isinstance(observation, Mapping) else None
        instruction = instruction or info.get("instruction", "")
        return self._screen(observation, f"Task: {instruction}\n\n")

    def feedback(self, observation: Any, info: Mapping[str, Any]) -> Any:
        """The screen after the last action, and why the action was refused when it was."""
        error = info.get("action_error")
        header = f"Your action was not run: {error}\n" if error else "After your action:\n"
        return self._screen(observation, header)

    def parse(self, completion: str, info: Mapping[str, Any]) -> ParsedAction:
        """pyautogui code or WAIT/DONE/FAIL."""
        return parse_desktop_action(completion)
