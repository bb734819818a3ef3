"""The agent for rla/Code-v0: the problem statement in, a Python program (in a fenced block) out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rla_train.agents.base import ChatAgent
from rla_train.agents.parsing import ParsedAction, parse_code_block

__all__ = ["CodeAgent"]

_SYSTEM = ("You are an expert Python programmer. Solve the problem. Answer with the complete program in one "
           "```python code block.")


class CodeAgent(ChatAgent):
    """Writes programs: the first turn is the problem (statement, signature, examples); in multi-turn mode
    each further user turn is the env's verdict on the last submission (public tests only)."""

    kind = "code"
    default_system_prompt = _SYSTEM
    default_history_window = None

    def first_message(self, observation: Any, info: Mapping[str, Any]) -> str:
        """The problem as the env states it."""
        return str(observation).strip()

    def feedback(self, observation: Any, info: Mapping[str, Any]) -> str:
        """The verdict on the last submission."""
        return str(observation).strip()

    def parse(self, completion: str, info: Mapping[str, Any]) -> ParsedAction:
        """The whole completion goes to the env (which takes the program from its code block)."""
        return parse_code_block(completion)
