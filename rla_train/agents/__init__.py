"""Agents: prompt builders and action parsers per env family.

    agent = make_agent("rla/AlfWorld-v0")            # or a family name: "alfworld", "code", ...
    chat = agent.prompt(episode)                      # the chat the policy answers
    parsed = agent.parse(completion, info)            # ParsedAction(action, error); never raises
"""

from __future__ import annotations

from typing import Any

from rla_envs.core.errors import did_you_mean
from rla_train.agents.base import ChatAgent
from rla_train.agents.code import CodeAgent
from rla_train.agents.desktop import DesktopAgent
from rla_train.agents.parsing import ParsedAction
from rla_train.agents.text_games import TextGameAgent

__all__ = ["ChatAgent", "TextGameAgent", "CodeAgent", "DesktopAgent", "ParsedAction", "AGENTS", "ENV_FAMILIES",
           "make_agent", "family_of"]

AGENTS: dict[str, type[ChatAgent]] = {"alfworld": TextGameAgent, "textworld": TextGameAgent, "code": CodeAgent,
                                      "desktop": DesktopAgent}
"""The agent class for each env family."""

ENV_FAMILIES = {"rla/AlfWorld-v0": "alfworld", "rla/TextWorld-v0": "textworld", "rla/Code-v0": "code",
                "rla/OSWorld-v0": "desktop"}
"""The family of each registered env id."""


def family_of(env_or_family: str) -> str:
    """The family name for an env id (``"rla/AlfWorld-v0"`` -> ``"alfworld"``) or a family name."""
    if env_or_family in AGENTS:
        return env_or_family
    if env_or_family in ENV_FAMILIES:
        return ENV_FAMILIES[env_or_family]
    hint = did_you_mean(env_or_family, [*ENV_FAMILIES, *AGENTS])
    raise ValueError(f"no agent for {env_or_family!r}: expected an env id {sorted(ENV_FAMILIES)} or a family "
                     f"{sorted(AGENTS)}.{hint}")


def make_agent(env_or_family: str, **options: Any) -> ChatAgent:
    """The agent for an env id or family, built with ``options`` (e.g. ``action_format="index"``)."""
    return AGENTS[family_of(env_or_family)](**options)
