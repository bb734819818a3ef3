"""Agents: prompt builders and action parsers, one per agent kind; each family names its kind in its FamilySpec.

    agent = make_agent("rla/AlfWorld-v0")            # or a family name: "alfworld", "code", ...
    chat = agent.prompt(episode)                      # the chat the policy answers
    parsed = agent.parse(completion, info)            # ParsedAction(action, error); never raises
"""

from __future__ import annotations

from typing import Any

from rla_envs.core.registry import family_spec
from rla_train.agents.base import ChatAgent
from rla_train.agents.code import CodeAgent
from rla_train.agents.desktop import DesktopAgent
from rla_train.agents.parsing import ParsedAction
from rla_train.agents.text_games import TextGameAgent

__all__ = ["ChatAgent", "TextGameAgent", "CodeAgent", "DesktopAgent", "ParsedAction", "AGENTS", "agent_kind",
           "make_agent"]

AGENTS: dict[str, type[ChatAgent]] = {cls.kind: cls for cls in (TextGameAgent, CodeAgent, DesktopAgent)}
"""The agent class of each agent kind (``"text_game"``, ``"code"``, ``"desktop"``)."""


def agent_kind(env_or_family: str) -> str:
    """The agent kind that plays an env id or family (its ``FamilySpec.agent``), checked against :data:`AGENTS`.

    Raises UnknownFamily (a KeyError, with a did-you-mean hint) for an unregistered name, ValueError for a
    family whose agent kind has no agent class here.
    """
    spec = family_spec(env_or_family)
    if spec.agent not in AGENTS:
        raise ValueError(f"family {spec.name!r} is played by agent kind {spec.agent!r}, which rla_train has no agent "
                         f"for; kinds: {sorted(AGENTS)} (or build your ChatAgent subclass yourself)")
    return spec.agent


def make_agent(env_or_family: str, **options: Any) -> ChatAgent:
    """The agent for an env id or family, built with ``options`` (e.g. ``action_format="index"``)."""
    return AGENTS[agent_kind(env_or_family)](**options)
