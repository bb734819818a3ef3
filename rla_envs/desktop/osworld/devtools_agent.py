"""A DevTools client that runs INSIDE the desktop session: ``python3 -c <this file> '<request json>'``.

Chrome's remote-debugging endpoint (port 1337, or 9222 through socat, as OSWorld's tasks start it) listens only
inside the session, so the host sends this file's source through the controller's ``execute`` and reads one JSON
object from its standard output. It needs only the standard library and Debian's ``python3-websocket`` (for
``Runtime.evaluate``), both in the session; it must not import anything from rla.

Requests (``{"op": ..., ...}``) and replies:

    tabs                          {"tabs": [{"id", "url", "title"}, ...]}  (page targets, most recently active first)
    open    {"urls"}              {"tabs": [...]}  each URL in a new tab, each waited for; then the tabs that were
                                  open before the first one close (OSWorld closes its start tab the same way)
    close   {"ids"}               {"closed": [ids]}
    active  {"html"?}             {"tab": {"id", "url", "title", "html"?} | null}  the tab shown in its window
    evaluate {"expression"}       {"tab": {...} | null, "value": ...}  the expression's value in the active tab's
                                  page once it loaded (a promise is awaited)
    visit   {"url", "expression"?, "html"?}
                                  {"tab": {...}, "value": ...}  the URL in a new tab, waited for; the expression's
                                  value and the page's HTML read there; then the tab closes again
Every reply may instead be ``{"error": "<reason>"}``. ``wait_s`` (default 30) bounds how long to wait for Chrome
to answer and for each page to finish loading.

Before a request and after it, the port must be held by the installed Chrome running its own code (the host sends
``listener_probe``'s source ahead of this file): on 9222, by socat forwarding to 1337, which Chrome must hold. So
a server the agent left listening in Chrome's place is refused instead of answering the evaluator.
"""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

if "port_holders" not in globals():  # run from its own file, without listener_probe's source sent ahead of it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from listener_probe import ForeignListener, holder_pids, port_holders, process_arguments

PORTS = (1337, 9222)
POLL_S = 0.25
CHROME = {"chromium", "chrome"}
FORWARDER = {"socat"}
FORWARD_TO_CHROME = ("tcp:localhost:1337", "tcp:127.0.0.1:1337")
"""socat's target argument as OSWorld's tasks start it (``socat tcp-listen:9222,fork tcp:localhost:1337``)."""


def _http(port, path, method="GET", timeout=5.0):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = response.read().decode("utf-8", "replace")
    return json.loads(body) if body.strip().startswith(("{", "[")) else body


def _find_port(deadline):
    last = "no port tried"
    while True:
        for port in PORTS:
            try:
                _http(port, "/json/version", timeout=2.0)
                return port
            except (OSError, ValueError) as exc:
                last = f"port {port}: {exc}"
        if time.monotonic() > deadline:
            raise RuntimeError(f"Chrome's remote-debugging port ({'/'.join(map(str, PORTS))}) does not answer "
                               f"({last}); start it with --remote-debugging-port=1337")
        time.sleep(POLL_S)


def _chrome_holders(port):
    """Who holds ``port``, when it is the installed Chrome (on 9222 also socat forwarding to Chrome's 1337);
    raises ``ForeignListener`` otherwise."""
    holders = port_holders(port, CHROME if port == PORTS[0] else CHROME | FORWARDER)
    if not holders:  # it answered a moment ago: whoever did has gone, or took over after the check
        raise ForeignListener(f"port {port} answered, but no process holds it now")
    for pid in holder_pids(holders):
        if os.path.basename(os.readlink(f"/proc/{pid}/exe")) in FORWARDER:
            if not set(FORWARD_TO_CHROME) & set(process_arguments(pid)):
                raise ForeignListener(f"port {port}: socat (process {pid}) does not forward to Chrome's {PORTS[0]}")
            if not port_holders(PORTS[0], CHROME):
                raise ForeignListener(f"port {port}: socat forwards to {PORTS[0]}, where Chrome does not listen")
    return holders


def _pages(port):
    return [{"id": t["id"], "url": t.get("url", ""), "title": t.get("title", ""),
             "ws": t.get("webSocketDebuggerUrl")} for t in _http(port, "/json/list") if t.get("type") == "page"]


def _evaluate(ws_url, expression, timeout=10.0, await_promise=False):
    import websocket  # Debian's python3-websocket; only needed for page contents

    sock = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
    try:
        sock.send(json.dumps({"id": 1, "method": "Runtime.evaluate",
                              "params": {"expression": expression, "returnByValue": True,
                                         "awaitPromise": await_promise}}))
        while True:
            message = json.loads(sock.recv())
            if message.get("id") == 1:
                break
    finally:
        sock.close()
    result = message.get("result", {}).get("result", {})
    return result.get("value")


def _wait_loaded(port, tab_id, deadline, blank_ok=True):
    """Wait until the tab's document has loaded (readyState 'complete') or the deadline passes; a new tab shows
    about:blank before it navigates, so ``blank_ok=False`` waits past it."""
    while time.monotonic() < deadline:
        page = next((p for p in _pages(port) if p["id"] == tab_id), None)
        if page is None or not page["ws"]:
            return
        try:
            if _evaluate(page["ws"], "document.readyState") == "complete" and (blank_ok or page["url"] != "about:blank"):
                return
        except Exception:  # the page is navigating: its context goes away and comes back
            pass
        time.sleep(POLL_S)


def _public(page):
    return {key: page[key] for key in ("id", "url", "title")}


def op_tabs(port, request, deadline):
    return {"tabs": [_public(p) for p in _pages(port)]}


def op_open(port, request, deadline):
    before = [p["id"] for p in _pages(port)]
    for index, url in enumerate(request["urls"]):
        target = _http(port, "/json/new?" + urllib.parse.quote(url, safe=""), method="PUT")
        _wait_loaded(port, target["id"], time.monotonic() + float(request.get("wait_s", 30)),
                     blank_ok=url == "about:blank")
        if index == 0:
            for tab_id in before:
                _http(port, f"/json/close/{tab_id}")
    return op_tabs(port, request, deadline)


def op_close(port, request, deadline):
    for tab_id in request["ids"]:
        _http(port, f"/json/close/{tab_id}")
    return {"closed": list(request["ids"])}


def _active_page(port):
    pages = _pages(port)
    for page in pages:  # the tab its window shows is 'visible'; the list runs most recently active first
        try:
            if page["ws"] and _evaluate(page["ws"], "document.visibilityState") == "visible":
                return page
        except Exception:
            continue
    return pages[0] if pages else None


def _read_page(page, tab):
    """Fill ``tab`` with the loaded page's own title, URL and HTML (as playwright's ``page.content()``)."""
    tab["title"] = _evaluate(page["ws"], "document.title") or tab["title"]
    tab["url"] = _evaluate(page["ws"], "location.href") or tab["url"]
    tab["html"] = _evaluate(page["ws"], "(document.doctype ? new XMLSerializer().serializeToString("
                                        "document.doctype) : '') + document.documentElement.outerHTML")


def op_active(port, request, deadline):
    chosen = _active_page(port)
    if chosen is None:
        return {"tab": None}
    tab = _public(chosen)
    if request.get("html"):
        _wait_loaded(port, chosen["id"], deadline)
        _read_page(chosen, tab)
    return {"tab": tab}


def op_evaluate(port, request, deadline):
    chosen = _active_page(port)
    if chosen is None:
        return {"tab": None, "value": None}
    _wait_loaded(port, chosen["id"], deadline)
    tab = _public(chosen)
    tab["url"] = _evaluate(chosen["ws"], "location.href") or tab["url"]
    return {"tab": tab, "value": _evaluate(chosen["ws"], request["expression"], await_promise=True)}


def op_visit(port, request, deadline):
    url = request["url"]
    target = _http(port, "/json/new?" + urllib.parse.quote(url, safe=""), method="PUT")
    try:
        _wait_loaded(port, target["id"], deadline, blank_ok=url == "about:blank")
        page = next((p for p in _pages(port) if p["id"] == target["id"]), None)
        if page is None or not page["ws"]:
            raise RuntimeError(f"the tab opened for {url} went away")
        tab, value = _public(page), None
        if request.get("expression"):
            value = _evaluate(page["ws"], request["expression"], timeout=max(1.0, deadline - time.monotonic()),
                              await_promise=True)
        if request.get("html"):
            _read_page(page, tab)
    finally:
        _http(port, f"/json/close/{target['id']}")
    return {"tab": tab, "value": value}


OPS = {"tabs": op_tabs, "open": op_open, "close": op_close, "active": op_active, "evaluate": op_evaluate,
       "visit": op_visit}


def main(argv):
    request = json.loads(argv[1])
    deadline = time.monotonic() + float(request.get("wait_s", 30))
    try:
        port = _find_port(deadline)
        holders = _chrome_holders(port)
        reply = OPS[request["op"]](port, request, deadline)
        if _chrome_holders(port) != holders:
            raise ForeignListener(f"port {port} changed hands during the request")
    except Exception as exc:  # one JSON line either way: the host turns it into a clear error
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(reply))


if __name__ == "__main__":
    main(sys.argv)
