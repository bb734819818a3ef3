"""The vm_terminal_output getter's reading of an accessibility tree, and its runnable check."""

import pytest

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.terminal import terminal_text
from rla_envs.desktop.osworld.runnable import evaluator_reasons

ST = 'xmlns:st="https://accessibility.ubuntu.example.org/ns/state"'


def _tree(*frames, app="gnome-terminal-server"):
    return f'<desktop-frame {ST}><application name="{app}">{"".join(frames)}</application></desktop-frame>'


def _frame(text, *, active=True, focused=True):
    frame_state = ' st:active="true"' if active else ""
    terminal_state = ' st:focused="true"' if focused else ""
    return f'<frame name="Terminal"{frame_state}><filler><terminal{terminal_state}>{text}</terminal></filler></frame>'


def test_reads_the_focused_terminal_of_the_active_window():
    assert terminal_text(_tree(_frame("$ stty size\n43 132\n$   \n\n"))) == "$ stty size\n43 132\n$"
    assert terminal_text(_tree(_frame("old", active=False), _frame("54 total"))) == "54 total"


@pytest.mark.parametrize("tree", [
    _tree(_frame("x", focused=False)), _tree(_frame("x", active=False)), _tree(_frame("x"), app="xterm"),
    _tree(_frame("a"), _frame("b"))])
def test_no_single_focused_terminal_gives_none(tree):
    assert terminal_text(tree) is None


def test_a_tree_that_is_not_xml_is_an_evaluation_error():
    with pytest.raises(EvaluationError, match="not XML"):
        terminal_text("<desktop-frame")


@pytest.mark.parametrize(("installed", "reasons"), [
    (True, []), (False, ["getter 'vm_terminal_output': 'gnome-terminal' is not installed"])])
def test_runnable_needs_gnome_terminal(installed, reasons):
    evaluator = {"func": "check_include_exclude", "result": {"type": "vm_terminal_output"},
                 "expected": {"type": "rule", "rules": {"include": ["54"], "exclude": []}}}
    found = evaluator_reasons(evaluator, cache=None, task_id=None,
                              has_app=lambda name: installed or name != "gnome-terminal")
    assert found == reasons
