"""The accessibility tree's element for one accessible, read from stand-in AT-SPI objects (no desktop needed)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from rla_envs.desktop.controller import a11y

PYATSPI = SimpleNamespace(XY_SCREEN=0)


class Button:
    """A push button whose text read fails on the app's side and which has no Value interface."""

    name = "OK"

    def getRoleName(self):
        return "push button"

    def getState(self):
        return SimpleNamespace(get_states=lambda: [SimpleNamespace(value_nick=n) for n in ("showing", "visible")])

    def get_attributes(self):
        return {"toolkit": "gtk"}

    def queryComponent(self):
        return SimpleNamespace(getExtents=lambda coords: (10, 20, 80, 30))

    def queryText(self):
        raise RuntimeError("D-Bus: the app did not answer")

    def queryValue(self):
        raise NotImplementedError  # a button has no Value: nothing to report

    def queryAction(self):
        return SimpleNamespace(nActions=1, getName=lambda i: "click", getDescription=lambda i: "Clicks the button",
                               getKeyBinding=lambda i: "Return")


def test_a_field_the_app_failed_to_give_is_left_out_and_logged_with_its_name(caplog):
    with caplog.at_level(logging.DEBUG, logger=a11y.__name__):
        element, states, box = a11y._element(Button(), PYATSPI, offset=(5, 0))
    assert element.tag == "push-button" and element.get("name") == "OK" and element.text is None
    assert box == (15, 20, 80, 30) and states == {"showing", "visible"}
    assert element.get(a11y._CP + "screencoord") == "(15, 20)"
    assert element.get(a11y._ACT + "click_desc") == "Clicks the button" and element.get(a11y._ACT + "click_kb") == "Return"
    assert element.get(a11y._ATTR + "toolkit") == "gtk"
    assert not any(key.startswith(a11y._VAL) for key in element.attrib)
    logged = [record.getMessage() for record in caplog.records]
    assert logged == ["accessibility tree: text of \"push button 'OK'\" not read: RuntimeError: D-Bus: the app did not answer"]
