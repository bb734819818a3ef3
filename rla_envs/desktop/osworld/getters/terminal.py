"""``vm_terminal_output``: the text of the terminal the user is looking at, read from the accessibility tree.

As OSWorld's controller reads it: the focused ``terminal`` inside the active ``frame`` of GNOME Terminal
(application ``gnome-terminal-server``), its text with trailing whitespace removed; None when there is no such
terminal or more than one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.controller.a11y import NAMESPACES
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter

__all__ = ["GETTERS", "terminal_text", "TERMINAL_APP", "TERMINAL_XPATH"]

TERMINAL_APP = "gnome-terminal"
"""The program the session needs for this getter (its accessibility name is ``gnome-terminal-server``)."""

TERMINAL_XPATH = ('//application[@name="gnome-terminal-server"]/frame[@st:active="true"]'
                  '//terminal[@st:focused="true"]')
"""Where the terminal the user is looking at sits in the accessibility tree."""


def terminal_text(tree_xml: str) -> str | None:
    """The focused terminal's text in an accessibility tree (XML text), right-stripped; None without exactly one."""
    from lxml import etree

    try:
        tree = etree.fromstring(tree_xml.encode("utf-8"))
    except etree.XMLSyntaxError as exc:
        raise EvaluationError(f"vm_terminal_output: the accessibility tree is not XML: {exc}") from exc
    terminals = tree.xpath(TERMINAL_XPATH, namespaces=NAMESPACES)
    return (terminals[0].text or "").rstrip() if len(terminals) == 1 else None


def get_vm_terminal_output(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """The text of the session's focused GNOME Terminal (None when none is focused)."""
    try:
        tree_xml = ctx.client.accessibility_tree()
    except ControllerError as exc:
        raise EvaluationError(f"vm_terminal_output: {exc}") from exc
    return terminal_text(tree_xml)


GETTERS: dict[str, Getter] = {"vm_terminal_output": get_vm_terminal_output}
"""The terminal getter, by OSWorld ``type``."""
