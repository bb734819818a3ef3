"""The AT-SPI accessibility tree of the session as OSWorld's XML (``/accessibility`` -> ``{"AT": xml}``).

Same shape as OSWorld's Ubuntu tree: a ``desktop-frame`` root, one element per accessible named after its
role (``push-button``, ``document-spreadsheet``...), ``name`` plus namespaced attributes for states
(``st:showing="true"``), object attributes (``attr:``), screen position and size (``cp:screencoord="(x,
y)"``, ``cp:size="(w, h)"``), values (``val:``) and actions (``act:``), and the accessible's text as the
element's text. Off-screen subtrees (a closed menu's items) are listed down to the off-screen node only;
spreadsheet tables list only the cells on screen. Depth, width, node count and time are capped so a
LibreOffice Calc window answers in about a second or two.
"""

from __future__ import annotations

import logging
import time
import xml.etree.ElementTree as ET
from functools import partial
from typing import Callable, TypeVar

__all__ = ["accessibility_tree", "NAMESPACES"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

NAMESPACES = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}
for _prefix, _uri in NAMESPACES.items():
    ET.register_namespace(_prefix, _uri)

MAX_DEPTH = 50
MAX_CHILDREN = 1024    # children listed per node; above it only those on screen
MAX_NODES = 20000
MAX_TABLE_CELLS = 4000
TIME_BUDGET_S = 10.0
_ST = "{%s}" % NAMESPACES["st"]
_ATTR = "{%s}" % NAMESPACES["attr"]
_CP = "{%s}" % NAMESPACES["cp"]
_VAL = "{%s}" % NAMESPACES["val"]
_ACT = "{%s}" % NAMESPACES["act"]
_VALUE_FIELDS = (("value", "currentValue"), ("min", "minimumValue"), ("max", "maximumValue"), ("step", "minimumIncrement"))


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0
        self.deadline = time.monotonic() + TIME_BUDGET_S

    def spent(self) -> bool:
        return self.nodes >= MAX_NODES or time.monotonic() > self.deadline


def _tag(role_name: str) -> str:
    tag = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in (role_name.strip() or "unknown"))
    return tag if tag[0].isalpha() else f"tag-{tag}"


def _clean(text: str) -> str:
    """Text an XML document can hold (control characters and replacement objects dropped)."""
    return "".join(ch for ch in text if ch in "\t\n\r" or (ord(ch) >= 0x20 and ch not in "\ufffc\ufffd"))


Box = tuple[int, int, int, int]


def _read(node, field: str, read: Callable[[], _T]) -> _T | None:
    """``read()`` of one field of an accessible, or None when it cannot be read.

    An accessible without the interface (``NotImplementedError``: a label has no Value) simply has no such
    field. Any other failure is the app's side of AT-SPI (a D-Bus error, a stale object): the field is
    left out of the tree and logged at debug level with its name, so a missing field can be traced.
    """
    try:
        return read()
    except NotImplementedError:
        return None
    except Exception as exc:  # GLib.GError, LookupError, RuntimeError...: whatever the app's AT-SPI side raised
        logger.debug("accessibility tree: %s of %r not read: %s: %s", field, _node_label(node), type(exc).__name__, exc)
        return None


def _node_label(node) -> str:
    """``role "name"`` of an accessible, for log lines (never raises)."""
    try:
        return f"{node.getRoleName()} {node.name!r}"
    except Exception as exc:  # a node that cannot even name itself is logged as such
        return f"<unnamed accessible: {type(exc).__name__}>"


def _describe_action(action, index: int) -> tuple[str, str, str]:
    """``(name, description, key binding)`` of an accessible's action ``index``."""
    return action.getName(index), action.getDescription(index), action.getKeyBinding(index)


def _element(node, pyatspi, offset: tuple[int, int]) -> tuple[ET.Element, set, Box | None]:
    """The XML element for one accessible (its children not yet added), its state nicks and its box.

    ``offset`` is added to the position the accessible reports (see :func:`_build`).
    """
    attributes: dict[str, str] = {"name": _clean(node.name or "")}
    states = {state.value_nick for state in node.getState().get_states()}
    for nick in sorted(states):
        attributes[_ST + nick.replace("-", "_")] = "true"
    for key, value in (_read(node, "attributes", node.get_attributes) or {}).items():
        if key:
            attributes[_ATTR + _tag(key)] = _clean(str(value))
    element = ET.Element(_tag(node.getRoleName() or "unknown"), attributes)
    box = None
    if "showing" not in states:
        # Off screen (e.g. the items of a closed menu): no position, text, value or actions to read.
        return element, states, box
    if "visible" in states:
        extents = _read(node, "extents", lambda: node.queryComponent().getExtents(pyatspi.XY_SCREEN))
        if extents is not None:
            x, y, width, height = extents
            box = (x + offset[0], y + offset[1], width, height)
            attributes[_CP + "screencoord"] = f"({box[0]}, {box[1]})"
            attributes[_CP + "size"] = f"({width}, {height})"
    text = _clean(_read(node, "text", lambda: node.queryText().getText(0, -1)) or "")
    value = _read(node, "value", node.queryValue)
    for key, name in _VALUE_FIELDS if value is not None else ():
        number = _read(node, f"value {name}", partial(getattr, value, name))
        if number is not None:
            attributes[_VAL + key] = str(number)
    action = _read(node, "actions", node.queryAction)
    count = _read(node, "action count", partial(getattr, action, "nActions")) if action is not None else None
    for index in range(count or 0):
        described = _read(node, f"action {index}", partial(_describe_action, action, index))
        if described is not None:
            name, description, key_binding = described
            attributes[_ACT + _tag(name.replace(" ", "-")) + "_desc"] = _clean(description or "")
            attributes[_ACT + _tag(name.replace(" ", "-")) + "_kb"] = _clean(key_binding or "")
    element.attrib.update(attributes)
    if text:
        element.text = text
    return element, states, box


def _column_letters(index: int) -> str:
    """A spreadsheet column's letters: 0 -> A, 25 -> Z, 26 -> AA."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(ord("A") + remainder) + letters
    return letters


def _visible_range(table_node, table, pyatspi) -> tuple[int, int, int, int] | None:
    """``(first row, last row, first column, last column)`` of the cells on screen."""
    component = table_node.queryComponent()
    x, y, width, height = component.getExtents(pyatspi.XY_SCREEN)
    first = component.getAccessibleAtPoint(x + 1, y + 1, pyatspi.XY_SCREEN)
    last = component.getAccessibleAtPoint(x + width - 2, y + height - 2, pyatspi.XY_SCREEN)
    if first is None or last is None:
        return None
    first_index, last_index = first.getIndexInParent(), last.getIndexInParent()
    return (table.getRowAtIndex(first_index), table.getRowAtIndex(last_index),
            table.getColumnAtIndex(first_index), table.getColumnAtIndex(last_index))


def _table_cells(table_node, budget: _Budget, pyatspi, offset: tuple[int, int]) -> list[ET.Element]:
    """The on-screen cells of a huge table (a spreadsheet), row by row, read lean.

    Cells are transient accessibles (never cached by AT-SPI), so every read is a D-Bus round trip. So a
    cell costs three: the cell itself, its states and its text. Its position and size come from the grid
    (one read per visible row and per visible column); its name is computed (``B7``) when the table names
    its cells that way; its value, actions and (mostly empty) object attributes, which repeat its text, are
    left out.
    """
    from gi.repository import Atspi

    try:
        table = table_node.queryTable()
        visible = _visible_range(table_node, table, pyatspi)
    except Exception as exc:  # the app's AT-SPI side: the table is listed without its cells
        logger.debug("accessibility tree: cells of %r not read: %s: %s", _node_label(table_node), type(exc).__name__, exc)
        return []
    if visible is None:
        return []
    row0, row1, col0, col1 = visible
    cells: dict[tuple[int, int], object] = {}

    def cell_at(row: int, column: int):
        if (row, column) not in cells:
            try:
                cells[(row, column)] = table.getAccessibleAt(row, column)
            except Exception:
                cells[(row, column)] = None
        return cells[(row, column)]

    def extents(cell) -> tuple[int, int, int, int] | None:
        try:
            rect = Atspi.Component.get_extents(cell, Atspi.CoordType.SCREEN)
            return rect.x + offset[0], rect.y + offset[1], rect.width, rect.height
        except Exception:
            return None

    columns = {c: extents(cell) for c in range(col0, col1 + 1) if (cell := cell_at(row0, c)) is not None}
    rows = {r: extents(cell) for r in range(row0, row1 + 1) if (cell := cell_at(r, col0)) is not None}
    first = cell_at(row0, col0)
    computed_names = first is not None and first.name == f"{_column_letters(col0)}{row0 + 1}"
    elements = []
    for row in range(row0, row1 + 1):
        for column in range(col0, col1 + 1):
            if len(elements) >= MAX_TABLE_CELLS or budget.spent():
                return elements
            cell = cell_at(row, column)
            if cell is None:
                continue
            budget.nodes += 1
            try:
                name = f"{_column_letters(column)}{row + 1}" if computed_names else (cell.name or "")
                states = {state.value_nick for state in cell.getState().get_states()}
                text = _clean(Atspi.Text.get_text(cell, 0, -1) or "")
            except Exception as exc:  # a cell that vanished while read: left out
                logger.debug("accessibility tree: cell (%d, %d) not read: %s: %s", row, column, type(exc).__name__, exc)
                continue
            attributes = {"name": _clean(name)}
            for nick in sorted(states):
                attributes[_ST + nick.replace("-", "_")] = "true"
            column_box, row_box = columns.get(column), rows.get(row)
            if column_box and row_box and "showing" in states:
                attributes[_CP + "screencoord"] = f"({column_box[0]}, {row_box[1]})"
                attributes[_CP + "size"] = f"({column_box[2]}, {row_box[3]})"
            element = ET.Element("table-cell", attributes)
            if text:
                element.text = text
            elements.append(element)
    return elements


def _children(node, pyatspi) -> list | None:
    """The children to list (None: a huge table, whose on-screen cells are read by :func:`_table_cells`)."""
    count = node.childCount
    if count <= MAX_CHILDREN:
        return [node.getChildAtIndex(i) for i in range(count)]
    if node.getRoleName() in ("table", "tree table"):
        return None
    return [child for child in (node.getChildAtIndex(i) for i in range(MAX_CHILDREN))
            if child is not None and child.getState().contains(pyatspi.STATE_SHOWING)]


def _build(node, depth: int, budget: _Budget, pyatspi, offset: tuple[int, int] = (0, 0),
           parent_box: Box | None = None) -> ET.Element | None:
    """The element of ``node`` and its subtree.

    LibreOffice's GTK3 plugin draws its window content below GTK's own menu bar, but the accessibles of
    that content (under a ``root-pane``) report positions as if the content started at the window's
    top: a root pane with its parent's size at another place gets moved onto its parent, and the same
    shift (``offset``) goes to everything under it.
    """
    if node is None or budget.spent():
        return None
    budget.nodes += 1
    try:
        element, states, box = _element(node, pyatspi, offset)
    except Exception as exc:  # the accessible vanished while we read it: left out with its subtree
        logger.debug("accessibility tree: an accessible at depth %d not read: %s: %s", depth, type(exc).__name__, exc)
        return None
    if (element.tag == "root-pane" and box is not None and parent_box is not None
            and box[2:] == parent_box[2:] and box[:2] != parent_box[:2]):
        offset = (offset[0] + parent_box[0] - box[0], offset[1] + parent_box[1] - box[1])
        box = parent_box
        element.set(_CP + "screencoord", f"({box[0]}, {box[1]})")
    if depth >= MAX_DEPTH:
        return element
    if "showing" not in states and element.tag != "application":
        # Nothing under an off-screen node is on screen (a closed menu's items, a hidden sidebar deck):
        # leaving those subtrees out keeps LibreOffice's tree to what an agent can see and act on.
        return element
    try:
        children = _children(node, pyatspi)
    except Exception as exc:  # listed without its subtree
        logger.debug("accessibility tree: children of %r not read: %s: %s", _node_label(node), type(exc).__name__, exc)
        return element
    if children is None:
        element.extend(_table_cells(node, budget, pyatspi, offset))
        return element
    for child in children:
        sub = _build(child, depth + 1, budget, pyatspi, offset, box)
        if sub is not None:
            element.append(sub)
    return element


def accessibility_tree() -> str:
    """The whole desktop's accessibility tree as OSWorld's XML text."""
    import pyatspi

    budget = _Budget()
    root = ET.Element("desktop-frame")
    desktop = pyatspi.Registry.getDesktop(0)
    for index in range(desktop.childCount):
        try:
            app = desktop.getChildAtIndex(index)
        except Exception as exc:  # an app that quit while listed
            logger.debug("accessibility tree: application %d not read: %s: %s", index, type(exc).__name__, exc)
            continue
        sub = _build(app, 1, budget, pyatspi)
        if sub is not None:
            root.append(sub)
    return ET.tostring(root, encoding="unicode")
