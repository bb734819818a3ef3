"""What OSWorld's page getters ask of a Chrome page, as JavaScript run there, and the pure logic over the answers.

    active_tab_html_parse       texts of elements picked by class (CSS), XPath or input field in the active tab;
                                the categories OSWorld's tasks use: ``class``, ``xpath``, ``input``, ``class&url``
    chrome_appearance_mode_ui   the light/dark/device mode Chrome's settings page (chrome://settings/appearance)
                                shows, read from its prefs and its selected controls

OSWorld reads pages with playwright (``query_selector_all``, ``locator("xpath=...")``, ``text_content()``,
``inner_text()``, ``input_value()``); here one expression evaluated in the page through DevTools asks the same
DOM questions (``querySelectorAll``, ``document.evaluate``, ``textContent``, ``innerText``, ``value``) and Python
builds OSWorld's dict from the answers, trimming where OSWorld trims. One difference: playwright's CSS engine also
looks inside open shadow roots; ``querySelectorAll`` does not (the tasks' sites do not put these elements there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DomQuery", "HTML_PARSE_CATEGORIES", "html_parse_problem", "dom_queries", "dom_expression",
           "html_parse_result", "APPEARANCE_URL", "APPEARANCE_PROBE", "appearance_mode"]

DomQuery = tuple[str, str]
"""``(kind, selector)``: one question asked in the page (kinds: the keys of ``_ANSWERS_JS``)."""

_ANSWERS_JS = """{
  texts: (s) => Array.from(document.querySelectorAll(s), (e) => e.textContent),
  direct_texts: (s) => {
    const e = document.querySelector(s);
    return e ? Array.from(e.childNodes).filter((n) => n.nodeType === Node.TEXT_NODE)
                    .map((n) => n.textContent.trim()).filter(Boolean) : [];
  },
  h3_texts: (s) => Array.from(document.querySelectorAll(s), (e) => e.querySelector('h3'))
                        .filter(Boolean).map((h) => h.textContent),
  li_span_texts: (s) => Array.from(document.querySelectorAll(s + ' li.catAllProducts'), (e) => e.querySelector('span'))
                             .filter(Boolean).map((span) => span.innerText),
  xpath_text: (s) => { const e = firstElement(s); return e ? e.textContent : null; },
  xpath_value: (s) => { const e = firstElement(s); return e ? controlOf(e).value : null; },
}"""
"""What each query kind answers: every matching element's ``textContent``; the first match's own text nodes,
trimmed, empty ones dropped (OSWorld's ``class_multiObject_child``); the ``textContent`` of each match's first
``h3``; the ``innerText`` of the first ``span`` of each ``li.catAllProducts`` inside a match; the first element an
XPath finds: its ``textContent``, or the value of the form field it is (or labels), as playwright's ``input_value``."""

_DOM_EXPRESSION = """((queries) => {
  const firstElement = (xpath) => {
    const found = document.evaluate(xpath, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    for (let i = 0; i < found.snapshotLength; i++) {
      if (found.snapshotItem(i).nodeType === Node.ELEMENT_NODE) return found.snapshotItem(i);
    }
    return null;
  };
  const controlOf = (e) => {
    if (['INPUT', 'TEXTAREA', 'SELECT'].includes(e.tagName)) return e;
    const label = e.closest('label');
    if (label && label.control) return label.control;
    throw new Error('not an input, textarea or select element');
  };
  const answers = %s;
  return {url: location.href, answers: queries.map(([kind, selector]) => {
    try { return {value: answers[kind](selector)}; } catch (error) { return {error: String(error)}; }
  })};
})(%s)"""

_CLASS_OPTIONS = {
    "class": {"class_multiObject": "texts", "class_multiObject_child": "direct_texts",
              "class_multiObject_only_child": "h3_texts", "class_multiObject_search_exist": "texts",
              "class_singleObject": "texts"},
    "class&url": {"class_multiObject": "texts", "class_multiObject_li": "li_span_texts"},
}
"""Per category, the config options keyed by class name, and the query kind each asks of ``.<class>``."""

_XPATH_OPTIONS = {"xpath": ("xpathObject", "xpath_text"), "input": ("inputObject", "xpath_value")}
"""Per category, the config option keyed by XPath, and the query kind each asks."""

HTML_PARSE_CATEGORIES = frozenset(_CLASS_OPTIONS) | frozenset(_XPATH_OPTIONS)
"""The ``category`` values supported (OSWorld also has ``label``, playwright's ``text=`` selector, no task uses)."""


def html_parse_problem(config: Mapping[str, Any]) -> str | None:
    """Why an ``active_tab_html_parse`` config cannot run here, or None when it can."""
    category = config.get("category")
    if not isinstance(category, str) or category not in HTML_PARSE_CATEGORIES:  # a list or dict is not hashable
        return (f"getter 'active_tab_html_parse' category {category!r} is not supported "
                f"(supported: {', '.join(sorted(HTML_PARSE_CATEGORIES))})")
    return None


def _mapping(config: Mapping[str, Any], option: str) -> Mapping[str, Any]:
    value = config.get(option) or {}
    if not isinstance(value, Mapping):
        raise ValueError(f"active_tab_html_parse option {option!r} must be an object, got {type(value).__name__}")
    return value


def dom_queries(config: Mapping[str, Any]) -> list[DomQuery]:
    """The questions a supported config asks of the page, each once, in order."""
    category = config["category"]
    found: dict[DomQuery, None] = {}
    for option, kind in _CLASS_OPTIONS.get(category, {}).items():
        found.update(((kind, "." + name), None) for name in _mapping(config, option))
    if category in _XPATH_OPTIONS:
        option, kind = _XPATH_OPTIONS[category]
        found.update(((kind, xpath), None) for xpath in _mapping(config, option))
    return list(found)


def dom_expression(queries: Sequence[DomQuery]) -> str:
    """The JavaScript expression that answers ``queries`` in a page: ``{"url", "answers": [{"value"} or
    {"error"}, ...]}`` (a query that throws, e.g. a bad selector, answers its error)."""
    return _DOM_EXPRESSION % (_ANSWERS_JS, json.dumps([list(query) for query in queries]))


class _Answers:
    """The page's answers by query; what OSWorld's playwright helpers return for each (their fallbacks on error)."""

    def __init__(self, queries: Sequence[DomQuery], answers: Sequence[Any]):
        self._by_query = {query: answer for query, answer in zip(queries, answers)}

    def _value(self, query: DomQuery) -> Any:
        answer = self._by_query.get(query)
        return answer.get("value") if isinstance(answer, Mapping) and "error" not in answer else None

    def texts(self, kind: str, class_name: str) -> list[str]:
        """The texts of a class query (``[]`` on error); stripped except the already trimmed direct texts."""
        values = self._value((kind, "." + class_name))
        if not isinstance(values, list):
            return []
        return [str(text) if kind == "direct_texts" else str(text).strip() for text in values]

    def first(self, kind: str, xpath: str) -> str:
        """The stripped text (or field value) of an XPath's first element; ``""`` for none or an error."""
        value = self._value((kind, xpath))
        return str(value).strip() if value else ""


def _indexed(result: dict[str, Any], texts: list[str], keys: Mapping[str, str]) -> None:
    for order, key in keys.items():
        index = int(order)
        result[key] = texts[index] if len(texts) > index else ""


def _class_result(config: Mapping[str, Any], answers: _Answers) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for option in ("class_multiObject", "class_multiObject_child", "class_multiObject_only_child"):
        kind = _CLASS_OPTIONS["class"][option]
        for class_name, keys in _mapping(config, option).items():
            _indexed(result, answers.texts(kind, class_name), keys)
    for class_name, wanted in _mapping(config, "class_multiObject_search_exist").items():
        texts = answers.texts("texts", class_name)
        result.update({item: item in texts for item in wanted if item != "is_other_exist"})
        if "is_other_exist" in wanted:
            result["is_other_exist"] = any(text not in wanted for text in texts)
    for class_name, key in _mapping(config, "class_singleObject").items():
        texts = answers.texts("texts", class_name)
        result[key] = texts[0] if texts else ""
    return result


def _listed(result: dict[str, Any], texts: list[str], wanted: Sequence[str]) -> None:
    """OSWorld's ``class&url`` check of a list of filters: each wanted one shown (case-insensitive) is True, and
    ``is_other_exist`` says whether a shown one is part of none of the wanted ones."""
    for item in wanted:
        if any(item.lower() == text.lower() for text in texts):
            result[item.lower()] = True
    if any(all(text.lower() not in item.lower() for item in wanted) for text in texts):
        result["is_other_exist"] = True
    result.setdefault("is_other_exist", False)


def _class_url_result(config: Mapping[str, Any], url: str, answers: _Answers) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for option, kind in _CLASS_OPTIONS["class&url"].items():
        for class_name, wanted in _mapping(config, option).items():
            _listed(result, answers.texts(kind, class_name), wanted)
    url = url.lower()
    for key in config.get("url_include_expected") or []:
        result.setdefault(key.lower(), key.lower() in url)
    for key, name in _mapping(config, "url_include_expected_multichoice").items():
        result.setdefault(name.lower(), key.lower() in url)
    return result


def html_parse_result(config: Mapping[str, Any], url: str, queries: Sequence[DomQuery],
                      answers: Sequence[Any]) -> dict[str, Any]:
    """OSWorld's ``active_tab_html_parse`` dict for a page at ``url`` whose answers to ``queries`` (from
    :func:`dom_expression`) are ``answers``."""
    category = config["category"]
    found = _Answers(queries, answers)
    if category == "class":
        return _class_result(config, found)
    if category == "class&url":
        return _class_url_result(config, url, found)
    option, kind = _XPATH_OPTIONS[category]
    return {key: found.first(kind, xpath) for xpath, key in _mapping(config, option).items()}


APPEARANCE_URL = "chrome://settings/appearance"

APPEARANCE_PROBE = """new Promise((resolve) => {
  const started = Date.now();
  const read = () => {
    const ui = document.querySelector('settings-ui');
    const prefs = (ui && ui.prefs) || {};
    const pref = (path) => path.split('.').reduce((node, key) => (node && typeof node === 'object' ? node[key] : undefined), prefs);
    const leaf = (path) => { const node = pref(path); return node && typeof node === 'object' && 'value' in node ? [node.value] : []; };
    if (!Object.keys(prefs).length && Date.now() - started < %d) { setTimeout(read, 100); return; }
    const roots = [document];
    for (let i = 0; i < roots.length; i++) {
      for (const e of roots[i].querySelectorAll('*')) { if (e.shadowRoot) roots.push(e.shadowRoot); }
    }
    const selected = [];
    for (const root of roots) {
      for (const e of root.querySelectorAll('[selected],[checked],[aria-checked="true"],option:checked')) {
        const text = (e.innerText || e.textContent || '').trim();
        if (text) selected.push(text);
      }
    }
    resolve({color_scheme: leaf('browser.theme.color_scheme'), color_scheme2: leaf('browser.theme.color_scheme2'),
             system_theme: leaf('extensions.theme.system_theme'), selected: selected});
  };
  read();
})"""
"""Evaluated in chrome://settings/appearance: waits (up to the %d milliseconds filled in) for the settings page's
prefs, then gives the appearance prefs it holds (``[value]`` or ``[]`` each) and the texts of its selected or
checked controls (through every shadow root)."""


def _scheme_mode(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    text = str(value).lower()
    return {"1": "light", "light": "light", "2": "dark", "dark": "dark", "0": "system", "system": "system",
            "default": "system", "device": "system"}.get(text)


def _text_mode(text: str) -> str | None:
    text = text.lower()
    if "light" in text:
        return "light"
    if "dark" in text:
        return "dark"
    if any(word in text for word in ("device", "system", "default")):
        return "system"
    return None


def appearance_mode(probe: Any) -> str | None:
    """The mode OSWorld's probe reports for :data:`APPEARANCE_PROBE`'s answer: ``"light"`` when anything says
    light, else ``"dark"``, else ``"system"``; None when nothing says (OSWorld then reads Preferences)."""
    if not isinstance(probe, Mapping):
        return None
    modes = [_scheme_mode(value) for key in ("color_scheme", "color_scheme2") for value in probe.get(key) or []]
    for value in probe.get("system_theme") or []:
        modes.append("light" if value in (0, "0", False) else "dark" if value in (1, "1", True) else None)
    modes += [_text_mode(str(text)) for text in probe.get("selected") or []]
    return next((mode for mode in ("light", "dark", "system") if mode in modes), None)
