"""Chrome's tabs in the session, through its DevTools endpoint: list, open, close, and the active tab's page.

The endpoint listens only inside the session, so each call runs :mod:`.devtools_agent` there with the session's
Debian ``python3`` (``client.execute``) and reads its JSON reply. OSWorld drives the same endpoint with
playwright's ``connect_over_cdp``; what a caller sees (tab URLs and titles, the page's HTML) is the same.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rla_envs.desktop.client import ControllerClient, ControllerError
from rla_envs.desktop.osworld.session_probe import SESSION_PYTHON, listener_probe_command

__all__ = ["ChromeTab", "ChromeDevTools", "DevToolsError", "SESSION_PYTHON", "AGENT_SOURCE"]


AGENT_SOURCE = (Path(__file__).with_name("devtools_agent.py")).read_text(encoding="utf-8")
"""The program sent into the session for each call (after ``listener_probe``'s source)."""

REPLY_MARGIN_S = 30.0
"""How much longer than the agent's own wait the controller call may take (start-up, transfers)."""


class DevToolsError(ControllerError):
    """Chrome's DevTools endpoint in the session did not answer, or refused a request."""


@dataclass(frozen=True)
class ChromeTab:
    """One open tab (a DevTools page target)."""

    id: str
    url: str
    title: str
    html: str | None = None

    def info(self) -> dict[str, str]:
        """OSWorld's tab dict: ``{"title", "url"}`` plus ``"content"`` (the HTML) when it was read."""
        found = {"title": self.title, "url": self.url}
        if self.html is not None:
            found["content"] = self.html
        return found


class ChromeDevTools:
    """Chrome's tabs in the session behind ``client``; every call waits up to ``wait_s`` for Chrome and pages."""

    def __init__(self, client: ControllerClient, *, wait_s: float = 30.0):
        self.client = client
        self.wait_s = wait_s

    def _call(self, op: str, **params: Any) -> dict[str, Any]:
        request = json.dumps({"op": op, "wait_s": self.wait_s, **params})
        reply = self.client.execute(listener_probe_command(AGENT_SOURCE, request),
                                    timeout=self.wait_s * max(1, len(params.get("urls", ()))) + REPLY_MARGIN_S)
        output = (reply.get("output") or "").strip()
        try:
            answer = json.loads(output)
        except ValueError:
            raise DevToolsError(f"the DevTools agent ({SESSION_PYTHON}) gave no JSON reply: output {output!r:.200}, "
                                f"error {reply.get('error')!r:.300}") from None
        if "error" in answer:
            raise DevToolsError(f"Chrome DevTools {op}: {answer['error']}")
        return answer

    def tabs(self) -> list[ChromeTab]:
        """The open tabs, most recently active first."""
        return [ChromeTab(**tab) for tab in self._call("tabs")["tabs"]]

    def open_tabs(self, urls: Sequence[str]) -> list[ChromeTab]:
        """Open each URL in a new tab (waiting for it to load), then close the tabs open before; the tabs after."""
        return [ChromeTab(**tab) for tab in self._call("open", urls=list(urls))["tabs"]]

    def close_tabs(self, ids: Sequence[str]) -> None:
        """Close the tabs with these ids."""
        self._call("close", ids=list(ids))

    def active_tab(self, *, html: bool = False) -> ChromeTab | None:
        """The tab its window shows (None without tabs); with ``html``, after it loaded, with its HTML."""
        tab = self._call("active", html=html)["tab"]
        return None if tab is None else ChromeTab(**tab)

    def evaluate_active(self, expression: str) -> tuple[ChromeTab, Any] | None:
        """The active tab (once loaded) and the value of the JavaScript ``expression`` in its page (a promise is
        awaited; the value comes back as JSON); None without tabs."""
        answer = self._call("evaluate", expression=expression)
        return None if answer["tab"] is None else (ChromeTab(**answer["tab"]), answer.get("value"))

    def visit(self, url: str, *, expression: str | None = None, html: bool = False) -> tuple[ChromeTab, Any]:
        """Load ``url`` in a new tab, evaluate ``expression`` there and read its HTML (``html``), then close the
        tab again: the tab as it was (with ``html``) and the expression's value."""
        answer = self._call("visit", url=url, expression=expression, html=html)
        return ChromeTab(**answer["tab"]), answer.get("value")
