"""Every message of a real Chromium session decodes with the typed bindings.

A headless Chromium loads ``pages/real_traffic.html`` (console calls of many kinds, uncaught errors, fetch,
XHR, a POST, a refused connection, an intercepted request, a websocket, a stylesheet, images, a 404, a CSS
animation, a same-origin iframe, a cross-site out-of-process iframe, a dedicated worker, cookies, storage,
a script that does not parse, a service worker, IndexedDB, Cache Storage, WebAudio, a download, a popup) and
the test drives it through more than 200 different raw commands; nearly 40 domains answer or report.

- Events: every session (the browser's, the page's and each auto-attached iframe and worker) is read raw
  (``typed=False``) and each event goes through ``cdp.decode_event``: none may be unknown to the bindings,
  none may fail to decode.
- Responses: every command is sent with ``execute_raw`` and hand-written wire params; its raw result must
  decode with ``cdp.decode_command(method, params).decode(result)``, and the typed command must re-encode to
  exactly the params that were sent.

A decode failure here means the protocol JSON calls a field required that Chromium leaves out (or some other
quirk): fix it in ``codegen/fixups.py`` and regenerate, never by hand in ``cdp/``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio_websocket

import cdp
from engine import Browser, Page, Session, SessionDetached, Subscription

pytestmark = pytest.mark.browser

Raw = dict[str, Any]

WAIT = 10  # seconds: the most any single wait for an event may take
BUFFER = 100_000
INTERCEPTED_BODY = "fulfilled by the test"
HIGHLIGHT = {"contentColor": {"r": 111, "g": 168, "b": 220, "a": 0.66}, "showInfo": True}


def _everything(_: Raw) -> bool:
    return True


class Traffic:
    """Every raw event and response of the test, decoded with the typed bindings as it arrives."""

    def __init__(self) -> None:
        self.events: Counter[str] = Counter()
        self.commands: Counter[str] = Counter()
        self.log: list[tuple[Session, str, Raw]] = []
        self.failures: list[str] = []
        self.subscriptions: list[Subscription[Any]] = []
        self._changed = trio.Event()

    # -- events ----------------------------------------------------------------------------------------

    def record(self, session: Session, method: str, params: Raw) -> None:
        self.events[method] += 1
        try:
            decoded = cdp.decode_event(method, params)
        except cdp.DecodeError as exc:
            self.failures.append(f"event {exc.method}: {exc.reason}; params {_short(params)}")
        else:
            if isinstance(decoded, cdp.UnknownEvent):
                self.failures.append(f"event {method} is unknown to the bindings; params {_short(params)}")
        self.log.append((session, method, params))
        self._changed.set()
        self._changed = trio.Event()

    async def event(
        self,
        method: str,
        where: Callable[[Raw], bool] = _everything,
        *,
        session: Session | None = None,
        since: int = 0,
        wait: float = WAIT,
    ) -> Raw:
        """The first ``method`` event (from ``session``, logged at index ``since`` or later) that matches."""
        return (await self.event_at(method, where, session=session, since=since, wait=wait))[1]

    async def event_at(
        self,
        method: str,
        where: Callable[[Raw], bool] = _everything,
        *,
        session: Session | None = None,
        since: int = 0,
        wait: float = WAIT,
    ) -> tuple[int, Raw]:
        """Like ``event``, with the log index of the match, so a caller can go on right after it."""
        with trio.move_on_after(wait):
            while True:
                for index in range(since, len(self.log)):
                    from_session, logged, params = self.log[index]
                    if logged == method and (session is None or from_session is session) and where(params):
                        return index, params
                since = len(self.log)
                await self._changed.wait()
        raise AssertionError(f"no matching {method} event within {wait} s")

    async def settle(self) -> None:
        """Let in-flight events arrive, then wait until every subscription's buffer is read."""
        await trio.sleep(0.3)
        with trio.fail_after(WAIT):
            while any(s.statistics().buffered for s in self.subscriptions):
                await trio.sleep(0.01)

    # -- commands --------------------------------------------------------------------------------------

    async def call(self, session: Session, method: str, params: Raw | None = None) -> Raw:
        """Send raw wire params, decode the raw result, check the typed command re-encodes the same params."""
        params = {} if params is None else params
        sent = json.dumps(params, sort_keys=True)
        result = await session.execute_raw(method, params)
        self.commands[method] += 1
        try:
            command = cdp.decode_command(method, params)
            command.decode(result)
        except cdp.DecodeError as exc:
            self.failures.append(f"command {exc.method}: {exc.reason}; payload {_short(exc.payload)}")
            return result
        if command.params != params or json.dumps(command.params, sort_keys=True) != sent:
            self.failures.append(f"command {method}: params re-encode as {command.params!r}, sent {params!r}")
        return result


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 600 else text[:600] + "..."


async def _read(
    session: Session, traffic: Traffic, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Record every event of ``session`` until it detaches (its buffered events are read first)."""
    started = False
    try:
        async with session.listen(buffer_size=BUFFER, overflow="error", typed=False) as subscription:
            traffic.subscriptions.append(subscription)
            task_status.started()
            started = True
            async for event in subscription:
                assert isinstance(event, cdp.UnknownEvent)  # typed=False: the raw params
                traffic.record(session, event.method, event.params)
    except SessionDetached:
        if not started:
            task_status.started()


def _descendants(session: Session) -> list[Session]:
    found = []
    for child in list(session.children.values()):
        found.append(child)
        found.extend(_descendants(child))
    return found


async def _follow_children(page: Session, traffic: Traffic, nursery: trio.Nursery) -> None:
    """Read each auto-attached iframe and worker session from the moment it appears."""
    seen: set[str | None] = set()
    while True:
        for child in _descendants(page):
            if child.session_id not in seen:
                seen.add(child.session_id)
                await nursery.start(_read, child, traffic)
        await trio.sleep(0.002)


async def _answer_intercepted(page: Session, traffic: Traffic) -> None:
    """Fetch.requestPaused: fulfil ``intercepted.txt``; read the body of the XHR at the response stage."""
    since = 0
    while True:
        # The test's own deadline bounds this background wait.
        # Go on right after this match, not at the log's end: both requests can pause within one read, and
        # skipping the second would leave the XHR paused for good.
        found, paused = await traffic.event_at(
            "Fetch.requestPaused", session=page, since=since, wait=math.inf
        )
        since = found + 1
        request_id = paused["requestId"]
        if "responseStatusCode" in paused:
            await traffic.call(page, "Fetch.getResponseBody", {"requestId": request_id})
            await traffic.call(page, "Fetch.continueResponse", {"requestId": request_id})
        else:
            body = base64.b64encode(INTERCEPTED_BODY.encode()).decode()
            headers = [{"name": "Content-Type", "value": "text/plain"}]
            await traffic.call(
                page,
                "Fetch.fulfillRequest",
                {"requestId": request_id, "responseCode": 200, "responseHeaders": headers, "body": body},
            )


async def _echo(request: trio_websocket.WebSocketRequest) -> None:
    """A websocket echo server for the page (Network.webSocketFrameSent/Received)."""
    socket = await request.accept()
    with contextlib.suppress(trio_websocket.ConnectionClosed):
        while True:
            await socket.send_message(await socket.get_message())


async def test_every_message_of_a_real_session_decodes(browser: Browser, server: str, tmp_path: Path) -> None:
    traffic = Traffic()
    started = time.monotonic()
    with trio.fail_after(45):  # about 5 s on an idle machine
        async with trio.open_nursery() as nursery:
            echo: trio_websocket.WebSocketServer = await nursery.start(
                trio_websocket.serve_websocket, _echo, "127.0.0.1", 0, None
            )
            await nursery.start(_read, browser.session, traffic)
            page = await browser.new_page()
            await nursery.start(_read, page.session, traffic)
            nursery.start_soon(_follow_children, page.session, traffic, nursery)
            nursery.start_soon(_answer_intercepted, page.session, traffic)
            await _exercise(browser, page, server, echo.port, tmp_path, traffic)
            await traffic.settle()
            nursery.cancel_scope.cancel()
    elapsed = time.monotonic() - started

    total_events = sum(traffic.events.values())
    total_commands = sum(traffic.commands.values())
    domains = {method.partition(".")[0] for method in (*traffic.events, *traffic.commands)}
    stats = browser.statistics()
    print(
        f"\nreal traffic: {len(traffic.events)} event methods ({total_events} events), "
        f"{len(traffic.commands)} command methods ({total_commands} responses) in {len(domains)} domains: "
        f"{total_events + total_commands} messages decoded in {elapsed:.1f} s "
        f"(the connection received {stats.messages_received} messages, "
        f"{stats.unknown_session_events} events for sessions it did not know)"
    )
    print("events:", ", ".join(f"{m} x{n}" for m, n in sorted(traffic.events.items())))
    print("commands:", ", ".join(sorted(traffic.commands)))
    assert not traffic.failures, "\n".join(traffic.failures)
    assert stats.malformed_messages == 0
    # Chromium 156 gives some 112 event methods and 235 command methods; leave room for other versions.
    assert len(traffic.events) >= 60
    assert len(traffic.commands) >= 150


async def _exercise(
    browser: Browser, page: Page, server: str, ws_port: int, downloads: Path, traffic: Traffic
) -> None:
    top = page.session
    url = f"{server}/real_traffic.html?ws={ws_port}"
    await _browser_level(browser, page, server, traffic)
    await _enable_domains(top, server, traffic)
    navigated = len(traffic.log)
    await page.goto(url)
    # Everything the page starts while it loads: wait for each, so the traffic is complete.
    await traffic.event("Runtime.exceptionThrown", session=top)
    await traffic.event("Runtime.exceptionRevoked", session=top)
    await traffic.event("Network.loadingFailed", session=top)
    await traffic.event("Runtime.consoleAPICalled", lambda p: _console_text(p) == "intercepted", session=top)
    await traffic.event("Runtime.consoleAPICalled", lambda p: _console_text(p) == "xhr", session=top)
    await traffic.event("Runtime.consoleAPICalled", lambda p: _console_text(p) == "from worker", session=top)
    await traffic.event(
        "Runtime.consoleAPICalled", lambda p: _console_text(p) == "websocket closed", session=top
    )
    await traffic.event(
        "Runtime.consoleAPICalled", lambda p: _console_text(p) == "service worker registered", session=top
    )
    await _children(page, traffic)
    frame_tree = await _page(top, url, traffic)
    await _dom_css_and_accessibility(top, frame_tree, traffic)
    await _runtime(top, frame_tree, navigated, traffic)
    await _debugger_and_profilers(top, traffic)
    await _network_and_storage(browser, top, server, frame_tree, traffic)
    await _storage_and_more(browser, page, frame_tree, downloads, traffic)
    await _emulation_and_input(top, traffic)
    await _tracing(browser, top, traffic)
    await _leave_and_come_back(page, server, traffic)


def _console_text(params: Raw) -> Any:
    args = params.get("args") or [{}]
    return args[0].get("value")


async def _browser_level(browser: Browser, page: Page, server: str, traffic: Traffic) -> None:
    b = browser.session
    await traffic.call(b, "Browser.getVersion")
    await traffic.call(b, "Target.getTargets")
    await traffic.call(b, "Target.getTargets", {"filter": [{"type": "page"}, {"exclude": True}]})
    await traffic.call(b, "Target.getTargetInfo", {"targetId": page.target_id})
    await traffic.call(b, "Target.getBrowserContexts")
    await traffic.call(b, "Target.activateTarget", {"targetId": page.target_id})
    window = await traffic.call(b, "Browser.getWindowForTarget", {"targetId": page.target_id})
    await traffic.call(b, "Browser.getWindowBounds", {"windowId": window["windowId"]})
    histograms = await traffic.call(b, "Browser.getHistograms", {"query": "Browser"})
    if histograms["histograms"]:
        name = histograms["histograms"][0]["name"]
        await traffic.call(b, "Browser.getHistogram", {"name": name, "delta": False})
    await traffic.call(
        b,
        "Browser.setPermission",
        {"permission": {"name": "geolocation"}, "setting": "granted", "origin": server},
    )
    await traffic.call(b, "Browser.resetPermissions")
    await traffic.call(b, "SystemInfo.getProcessInfo")
    await traffic.call(b, "SystemInfo.getInfo")
    await traffic.call(b, "Memory.getBrowserSamplingProfile")
    context = await traffic.call(b, "Target.createBrowserContext", {"disposeOnDetach": True})
    await traffic.call(b, "Target.disposeBrowserContext", {"browserContextId": context["browserContextId"]})


async def _enable_domains(top: Session, server: str, traffic: Traffic) -> None:
    """Enable what the page's load should report on, before it loads."""
    steps: list[tuple[str, Raw]] = [
        ("Page.enable", {}),
        ("Page.setLifecycleEventsEnabled", {"enabled": True}),
        ("Network.enable", {"maxPostDataSize": 65536}),
        ("Runtime.enable", {}),
        ("Runtime.setAsyncCallStackDepth", {"maxDepth": 8}),
        ("DOM.enable", {}),
        ("CSS.enable", {}),
        ("Log.enable", {}),
        ("Log.startViolationsReport", {"config": [{"name": "longTask", "threshold": 20}]}),
        ("Debugger.enable", {}),
        ("Debugger.setPauseOnExceptions", {"state": "none"}),
        # A breakpoint that resolves (Debugger.breakpointResolved) but never pauses.
        (
            "Debugger.setBreakpointByUrl",
            {"lineNumber": 60, "urlRegex": r"real_traffic\.js$", "condition": "false"},
        ),
        ("Performance.enable", {"timeDomain": "timeTicks"}),
        ("Accessibility.enable", {}),
        ("Security.enable", {}),
        ("Inspector.enable", {}),
        ("Audits.enable", {}),
        ("DOMStorage.enable", {}),
        ("Animation.enable", {}),
        ("Overlay.enable", {}),
        ("Profiler.enable", {}),
        ("HeapProfiler.enable", {}),
        ("PerformanceTimeline.enable", {"eventTypes": ["largest-contentful-paint", "layout-shift"]}),
        ("ServiceWorker.enable", {}),
        ("Media.enable", {}),
        ("Preload.enable", {}),
        ("WebAudio.enable", {}),
        ("IndexedDB.enable", {}),
        ("Storage.trackIndexedDBForStorageKey", {"storageKey": f"{server}/"}),
        ("Storage.trackCacheStorageForStorageKey", {"storageKey": f"{server}/"}),
        ("Runtime.addBinding", {"name": "reportBack"}),
        ("Page.addScriptToEvaluateOnNewDocument", {"source": "window.__early = 1;"}),
        (
            "Fetch.enable",
            {
                "patterns": [
                    {"urlPattern": "*intercepted.txt", "requestStage": "Request"},
                    {"urlPattern": "*xhr=1", "requestStage": "Response"},
                ]
            },
        ),
    ]
    for method, params in steps:
        await traffic.call(top, method, params)


async def _children(page: Page, traffic: Traffic) -> None:
    """The cross-site iframe and the worker attach as child sessions: drive each a little."""
    top = page.session
    with trio.fail_after(WAIT):
        while True:
            kinds = {child.target_type: child for child in _descendants(top)}
            if "iframe" in kinds and "worker" in kinds:
                break
            await trio.sleep(0.01)
    await traffic.settle()
    frame, worker = kinds["iframe"], kinds["worker"]
    in_frame: list[tuple[str, Raw]] = [
        ("Runtime.enable", {}),
        ("Network.enable", {}),
        ("Log.enable", {}),
        ("Page.enable", {}),
        ("DOM.enable", {}),
        ("Debugger.enable", {}),
        ("Runtime.evaluate", {"expression": "location.href"}),
        ("Page.getFrameTree", {}),
        ("DOM.getDocument", {"depth": -1}),
        ("Accessibility.getFullAXTree", {}),
    ]
    for method, params in in_frame:
        await traffic.call(frame, method, params)
    await traffic.event("Runtime.consoleAPICalled", lambda p: _console_text(p) == "frame tick", session=frame)
    in_worker: list[tuple[str, Raw]] = [
        ("Runtime.enable", {}),
        ("Network.enable", {}),
        ("Debugger.enable", {}),
        ("Runtime.evaluate", {"expression": "self.name + typeof WorkerGlobalScope"}),
        (
            "Runtime.evaluate",
            {"expression": "fetch('real_traffic.json').then(r => r.status)", "awaitPromise": True},
        ),
    ]
    for method, params in in_worker:
        await traffic.call(worker, method, params)
    await traffic.event(
        "Runtime.consoleAPICalled", lambda p: _console_text(p) == "worker tick", session=worker
    )


async def _page(top: Session, url: str, traffic: Traffic) -> Raw:
    server = url.rsplit("/", 1)[0]
    tree = await traffic.call(top, "Page.getFrameTree")
    main_frame = tree["frameTree"]["frame"]["id"]
    await traffic.call(top, "Page.getResourceTree")
    await traffic.call(
        top, "Page.getResourceContent", {"frameId": main_frame, "url": f"{server}/real_traffic.css"}
    )
    await traffic.call(
        top,
        "Page.searchInResource",
        {"frameId": main_frame, "url": f"{server}/real_traffic.css", "query": "spin"},
    )
    await traffic.call(top, "Page.getNavigationHistory")
    await traffic.call(top, "Page.getLayoutMetrics")
    await traffic.call(top, "Page.getAppManifest")
    await traffic.call(top, "Page.getInstallabilityErrors")
    await traffic.call(top, "Page.getManifestIcons")
    await traffic.call(top, "Page.getAppId")
    await traffic.call(top, "Page.getAdScriptAncestry", {"frameId": main_frame})
    await traffic.call(top, "Page.getAnnotatedPageContent", {"includeActionableInformation": True})
    await traffic.call(
        top, "Page.getResourceContent", {"frameId": main_frame, "url": f"{server}/real_traffic.svg"}
    )
    await traffic.call(top, "Page.captureSnapshot", {"format": "mhtml"})
    await traffic.call(
        top, "Page.produceCompilationCache", {"scripts": [{"url": f"{server}/real_traffic.js"}]}
    )
    await traffic.call(top, "Emulation.getScreenInfos")
    await traffic.call(top, "Page.getPermissionsPolicyState", {"frameId": main_frame})
    await traffic.call(top, "Page.getOriginTrials", {"frameId": main_frame})
    await traffic.call(top, "Page.createIsolatedWorld", {"frameId": main_frame, "worldName": "test-world"})
    await traffic.call(top, "Page.captureScreenshot")
    await traffic.call(
        top,
        "Page.captureScreenshot",
        {"format": "jpeg", "quality": 40, "clip": {"x": 0, "y": 0, "width": 200, "height": 100, "scale": 1}},
    )
    await traffic.call(top, "Page.captureScreenshot", {"format": "webp", "captureBeyondViewport": True})
    pdf = await traffic.call(top, "Page.printToPDF", {"transferMode": "ReturnAsStream", "pageRanges": "1"})
    while not (await traffic.call(top, "IO.read", {"handle": pdf["stream"], "size": 65536}))["eof"]:
        pass
    await traffic.call(top, "IO.close", {"handle": pdf["stream"]})
    since = len(traffic.log)
    await traffic.call(top, "Page.startScreencast", {"format": "jpeg", "quality": 30, "everyNthFrame": 1})
    await traffic.call(top, "Runtime.evaluate", {"expression": "document.body.style.background = 'ivory'"})
    frame = await traffic.event("Page.screencastFrame", session=top, since=since)
    await traffic.call(top, "Page.screencastFrameAck", {"sessionId": frame["sessionId"]})
    await traffic.call(top, "Page.stopScreencast")
    # Same-document navigations: a fragment, then history.pushState (in window.mutate, below).
    since = len(traffic.log)
    await traffic.call(top, "Page.navigate", {"url": f"{url}#two"})
    await traffic.event("Page.navigatedWithinDocument", session=top, since=since)
    await traffic.call(top, "Page.getNavigationHistory")
    return tree


async def _dom_css_and_accessibility(top: Session, tree: Raw, traffic: Traffic) -> None:
    # A shallow document first, so that DOM.requestChildNodes has something to send (DOM.setChildNodes).
    shallow = await traffic.call(top, "DOM.getDocument")
    since = len(traffic.log)
    await traffic.call(
        top, "DOM.requestChildNodes", {"nodeId": shallow["root"]["nodeId"], "depth": -1, "pierce": True}
    )
    await traffic.event("DOM.setChildNodes", session=top, since=since)
    document = await traffic.call(top, "DOM.getDocument", {"depth": -1, "pierce": True})
    root = document["root"]["nodeId"]

    async def one(selector: str) -> int:
        found = await traffic.call(top, "DOM.querySelector", {"nodeId": root, "selector": selector})
        node_id: int = found["nodeId"]
        return node_id

    title, text, anchor, button = (
        await one("#title"),
        await one("#text"),
        await one("#anchor"),
        await one("#go"),
    )
    await traffic.call(top, "DOM.querySelectorAll", {"nodeId": root, "selector": "*"})
    described = await traffic.call(top, "DOM.describeNode", {"nodeId": title, "depth": -1, "pierce": True})
    backend = described["node"]["backendNodeId"]
    await traffic.call(top, "DOM.describeNode", {"backendNodeId": backend})
    await traffic.call(top, "DOM.describeNode", {"nodeId": await one("#same"), "depth": 2, "pierce": True})
    await traffic.call(top, "DOM.getBoxModel", {"nodeId": button})
    await traffic.call(top, "DOM.getContentQuads", {"backendNodeId": backend})
    await traffic.call(top, "DOM.getOuterHTML", {"nodeId": title})
    await traffic.call(top, "DOM.getOuterHTML", {"nodeId": await one("#host"), "includeShadowDOM": True})
    await traffic.call(top, "DOM.getAttributes", {"nodeId": title})
    await traffic.call(top, "DOM.getNodeForLocation", {"x": 20, "y": 20, "includeUserAgentShadowDOM": True})
    await traffic.call(top, "DOM.pushNodesByBackendIdsToFrontend", {"backendNodeIds": [backend]})
    await traffic.call(
        top, "DOM.getFrameOwner", {"frameId": tree["frameTree"]["childFrames"][0]["frame"]["id"]}
    )
    await traffic.call(top, "DOM.collectClassNamesFromSubtree", {"nodeId": root})
    await traffic.call(top, "DOM.getTopLayerElements")
    await traffic.call(
        top,
        "DOM.getNodesForSubtreeByStyle",
        {"nodeId": root, "computedStyles": [{"name": "display", "value": "inline-block"}], "pierce": True},
    )
    await traffic.call(top, "DOM.setInspectedNode", {"nodeId": title})
    await traffic.call(top, "DOM.scrollIntoViewIfNeeded", {"nodeId": button})
    search = await traffic.call(top, "DOM.performSearch", {"query": "li", "includeUserAgentShadowDOM": False})
    await traffic.call(
        top,
        "DOM.getSearchResults",
        {"searchId": search["searchId"], "fromIndex": 0, "toIndex": search["resultCount"]},
    )
    await traffic.call(top, "DOM.discardSearchResults", {"searchId": search["searchId"]})
    remote = await traffic.call(top, "DOM.resolveNode", {"nodeId": anchor, "objectGroup": "dom"})
    await traffic.call(top, "DOM.requestNode", {"objectId": remote["object"]["objectId"]})
    await traffic.call(
        top, "DOM.setAttributeValue", {"nodeId": anchor, "name": "data-set", "value": "by the test"}
    )
    await traffic.call(top, "DOM.removeAttribute", {"nodeId": anchor, "name": "data-set"})
    await traffic.call(top, "DOM.focus", {"nodeId": await one("#name")})
    since = len(traffic.log)
    await traffic.call(top, "Runtime.evaluate", {"expression": "window.mutate()", "returnByValue": True})
    await traffic.event("DOM.childNodeInserted", session=top, since=since)
    await traffic.event("DOM.shadowRootPushed", session=top, since=since)
    await traffic.event("Page.navigatedWithinDocument", session=top, since=since)

    # DOMSnapshot
    await traffic.call(
        top,
        "DOMSnapshot.captureSnapshot",
        {
            "computedStyles": ["color", "display", "font-size"],
            "includePaintOrder": True,
            "includeDOMRects": True,
            "includeBlendedBackgroundColors": True,
            "includeTextColorOpacities": True,
        },
    )

    # CSS
    sheet = await traffic.event(
        "CSS.styleSheetAdded", lambda p: p["header"]["sourceURL"].endswith("real_traffic.css"), session=top
    )
    sheet_id = sheet["header"]["styleSheetId"]
    await traffic.call(top, "CSS.getStyleSheetText", {"styleSheetId": sheet_id})
    await traffic.call(top, "CSS.collectClassNames", {"styleSheetId": sheet_id})
    for node in (title, text, anchor):
        await traffic.call(top, "CSS.getComputedStyleForNode", {"nodeId": node})
        await traffic.call(top, "CSS.getMatchedStylesForNode", {"nodeId": node})
        await traffic.call(top, "CSS.getInlineStylesForNode", {"nodeId": node})
    await traffic.call(top, "CSS.getPlatformFontsForNode", {"nodeId": title})
    await traffic.call(top, "CSS.getBackgroundColors", {"nodeId": title})
    await traffic.call(top, "CSS.getAnimatedStylesForNode", {"nodeId": await one("#spin")})
    await traffic.call(top, "CSS.getLayersForNode", {"nodeId": title})
    await traffic.call(top, "CSS.getMediaQueries")
    await traffic.call(top, "CSS.getEnvironmentVariables")
    await traffic.call(top, "CSS.getLonghandProperties", {"shorthandName": "margin", "value": "1px 2px"})
    await traffic.call(top, "CSS.forcePseudoState", {"nodeId": anchor, "forcedPseudoClasses": ["hover"]})
    await traffic.call(top, "CSS.startRuleUsageTracking")
    await traffic.call(top, "CSS.takeCoverageDelta")
    await traffic.call(top, "CSS.stopRuleUsageTracking")
    since = len(traffic.log)
    text_now = (await traffic.call(top, "CSS.getStyleSheetText", {"styleSheetId": sheet_id}))["text"]
    await traffic.call(
        top, "CSS.setStyleSheetText", {"styleSheetId": sheet_id, "text": text_now + "\nb { color: red; }"}
    )
    # The change a client makes is not echoed back to it; one the page makes is.
    await traffic.call(top, "Runtime.evaluate", {"expression": _INSERT_RULE})
    await traffic.event("CSS.styleSheetChanged", session=top, since=since)

    # Overlay and Animation
    await traffic.call(top, "Overlay.highlightNode", {"highlightConfig": HIGHLIGHT, "nodeId": title})
    await traffic.call(top, "Overlay.getHighlightObjectForTest", {"nodeId": title, "includeStyle": True})
    await traffic.call(top, "Overlay.hideHighlight")
    animation = await traffic.event("Animation.animationStarted", session=top)
    await traffic.call(top, "Animation.getCurrentTime", {"id": animation["animation"]["id"]})
    await traffic.call(top, "Animation.getPlaybackRate")
    await traffic.call(top, "Animation.resolveAnimation", {"animationId": animation["animation"]["id"]})

    # Accessibility
    await traffic.call(top, "Accessibility.getFullAXTree")
    same_origin = tree["frameTree"]["childFrames"][0]["frame"]["id"]
    await traffic.call(top, "Accessibility.getFullAXTree", {"frameId": same_origin})
    await traffic.call(top, "Accessibility.queryAXTree", {"nodeId": root, "role": "button"})
    await traffic.call(
        top, "Accessibility.queryAXTree", {"backendNodeId": backend, "accessibleName": "Real traffic"}
    )
    await traffic.call(top, "Accessibility.getPartialAXTree", {"nodeId": button, "fetchRelatives": True})
    ax_root = await traffic.call(top, "Accessibility.getRootAXNode")
    await traffic.call(top, "Accessibility.getChildAXNodes", {"id": ax_root["node"]["nodeId"]})
    await traffic.call(top, "Accessibility.getAXNodeAndAncestors", {"backendNodeId": backend})
    await traffic.call(top, "Audits.checkFormsIssues")

    # Deprecated, still served: last, as they may renumber the nodes.
    await traffic.call(
        top,
        "DOMSnapshot.getSnapshot",
        {
            "computedStyleWhitelist": ["color"],
            "includeEventListeners": True,
            "includeUserAgentShadowTree": True,
        },
    )
    await traffic.call(top, "DOM.getFlattenedDocument", {"depth": -1, "pierce": True})
    await traffic.call(top, "DOM.getDetachedDomNodes")


# Runtime.evaluate params: values, objects with previews, exceptions, promises and deep serialization.
EVALUATIONS: list[Raw] = [
    {"expression": "1 + 1"},
    {"expression": "'text'"},
    {"expression": "true"},
    {"expression": "null"},
    {"expression": "undefined"},
    {"expression": "NaN"},
    {"expression": "-0"},
    {"expression": "-Infinity"},
    {"expression": "12345678901234567890n"},
    {"expression": "Symbol('sym')"},
    {"expression": "({a: 1, b: 'two', c: [1, 2, 3], d: {e: null}, f() {}})", "generatePreview": True},
    {"expression": "({a: 1, b: [1, {c: 2}]})", "returnByValue": True},
    {"expression": "[1, 'two', {three: 3}, [4]]", "generatePreview": True},
    {"expression": "new Map([['k', {v: 1}], [2, 'two']])", "generatePreview": True},
    {"expression": "new Set([1, 'two'])", "generatePreview": True},
    {"expression": "new WeakMap([[{}, 1]])", "generatePreview": True},
    {"expression": "new Date(0)", "generatePreview": True},
    {"expression": "/re+/gi", "generatePreview": True},
    {"expression": "new Error('an error value')", "generatePreview": True},
    {"expression": "document.getElementById('title')", "generatePreview": True},
    {"expression": "document.querySelectorAll('li')", "generatePreview": True},
    {"expression": "(function named(a, b) { return a + b; })", "generatePreview": True},
    {"expression": "new Proxy({x: 1}, {})", "generatePreview": True},
    {"expression": "new Uint8Array([1, 2, 3])", "generatePreview": True},
    {"expression": "new ArrayBuffer(8)", "generatePreview": True},
    {
        "expression": "new (class Point { #secret = 1; constructor() { this.x = 1; } })()",
        "generatePreview": True,
    },
    {"expression": "Promise.resolve(42)", "generatePreview": True},
    {"expression": "new Promise(r => setTimeout(() => r({late: true}), 10))", "awaitPromise": True},
    {"expression": "Promise.reject(new Error('rejected'))", "awaitPromise": True},
    {"expression": "throw new Error('thrown')"},
    {"expression": "throw 'a string'"},
    {"expression": "syntax error ("},
    {"expression": "$('h1')", "includeCommandLineAPI": True, "objectGroup": "console"},
    {"expression": "window", "generatePreview": True, "objectGroup": "window"},
    {"expression": "document.title = document.title + '!'", "userGesture": True, "silent": True},
    {"expression": "1 + 1", "throwOnSideEffect": True, "timeout": 500},
    {"expression": "let replVariable = 1; replVariable", "replMode": True},
    {
        "expression": "({a: [1, {b: 2}], d: new Date(0), m: new Map([['k', 1]]), s: new Set([1]), r: /x/})",
        "serializationOptions": {"serialization": "deep", "maxDepth": 5},
    },
    {"expression": "document.body", "serializationOptions": {"serialization": "deep", "maxDepth": 1}},
    {"expression": "({toJSON() { return 1; }, x: 2})", "serializationOptions": {"serialization": "json"}},
    {"expression": "reportBack('from the page')"},
    {"expression": "console.log('evaluated', {a: 1}); queueMicrotask(() => { throw new Error('later'); })"},
    {"expression": "const t = Date.now(); while (Date.now() - t < 60) {} 'a long task'"},
]


async def _runtime(top: Session, tree: Raw, navigated: int, traffic: Traffic) -> None:
    for params in EVALUATIONS:
        await traffic.call(top, "Runtime.evaluate", params)
    await traffic.event("Runtime.bindingCalled", session=top)
    main_frame = tree["frameTree"]["frame"]["id"]

    def main_world(params: Raw) -> bool:
        aux = params["context"]["auxData"]
        return bool(aux["isDefault"] and aux["frameId"] == main_frame)

    context = await traffic.event("Runtime.executionContextCreated", main_world, session=top, since=navigated)
    context_id = context["context"]["id"]

    async def handle(expression: str) -> str:
        result = await traffic.call(
            top, "Runtime.evaluate", {"expression": expression, "objectGroup": "handles"}
        )
        object_id: str = result["result"]["objectId"]
        return object_id

    thing = await handle(
        "({plain: 1, get computed() { return 2; }, nested: {deep: true}, [Symbol('key')]: 3, method() {}})"
    )
    await traffic.call(
        top, "Runtime.getProperties", {"objectId": thing, "ownProperties": True, "generatePreview": True}
    )
    await traffic.call(top, "Runtime.getProperties", {"objectId": thing, "accessorPropertiesOnly": True})
    await traffic.call(top, "Runtime.getProperties", {"objectId": thing, "ownProperties": False})
    for expression in (
        "new Map([[1, 2]])",
        "(() => { const captured = 1; return function inner() { return captured; }; })()",
        "new (class { #hidden = 1; visible = 2; })()",
        "Promise.resolve(1)",
        "new Proxy({}, {})",
        "[1, 2, 3]",
        "document.getElementById('title')",
    ):
        await traffic.call(
            top, "Runtime.getProperties", {"objectId": await handle(expression), "ownProperties": True}
        )
    await traffic.call(
        top,
        "Runtime.callFunctionOn",
        {
            "functionDeclaration": "function (a, b, c) { return [this.plain, a, b, String(c)]; }",
            "objectId": thing,
            "arguments": [{"value": 1}, {"objectId": thing}, {"unserializableValue": "NaN"}],
            "returnByValue": True,
        },
    )
    await traffic.call(
        top,
        "Runtime.callFunctionOn",
        {
            "functionDeclaration": "async () => { throw new TypeError('from callFunctionOn'); }",
            "executionContextId": context_id,
            "awaitPromise": True,
        },
    )
    await traffic.call(
        top,
        "Runtime.callFunctionOn",
        {
            "functionDeclaration": "function () { return this; }",
            "objectId": thing,
            "serializationOptions": {"serialization": "deep"},
        },
    )
    promise = await handle("new Promise(r => setTimeout(() => r('awaited'), 10))")
    await traffic.call(top, "Runtime.awaitPromise", {"promiseObjectId": promise, "returnByValue": True})
    error = await handle("new RangeError('inspect me')")
    await traffic.call(top, "Runtime.getExceptionDetails", {"errorObjectId": error})
    prototype = await handle("HTMLLIElement.prototype")
    await traffic.call(
        top, "Runtime.queryObjects", {"prototypeObjectId": prototype, "objectGroup": "handles"}
    )
    compiled = await traffic.call(
        top,
        "Runtime.compileScript",
        {
            "expression": "6 * 7",
            "sourceURL": "compiled.js",
            "persistScript": True,
            "executionContextId": context_id,
        },
    )
    await traffic.call(
        top, "Runtime.runScript", {"scriptId": compiled["scriptId"], "executionContextId": context_id}
    )
    await traffic.call(
        top,
        "Runtime.compileScript",
        {"expression": "not valid (", "sourceURL": "broken.js", "persistScript": False},
    )
    await traffic.call(top, "Runtime.globalLexicalScopeNames", {"executionContextId": context_id})
    await traffic.call(top, "Runtime.getHeapUsage")
    await traffic.call(top, "Runtime.getIsolateId")
    await traffic.call(top, "Runtime.releaseObject", {"objectId": thing})
    await traffic.call(top, "Runtime.releaseObjectGroup", {"objectGroup": "handles"})
    await traffic.call(top, "Runtime.removeBinding", {"name": "reportBack"})
    await traffic.call(top, "Runtime.discardConsoleEntries")


async def _debugger_and_profilers(top: Session, traffic: Traffic) -> None:
    script = await traffic.event(
        "Debugger.scriptParsed", lambda p: p["url"].endswith("/real_traffic.js"), session=top
    )
    script_id = script["scriptId"]
    await traffic.event("Debugger.scriptFailedToParse", session=top)
    await traffic.event("Debugger.breakpointResolved", session=top)
    await traffic.call(top, "Debugger.getScriptSource", {"scriptId": script_id})
    await traffic.call(top, "Debugger.searchInContent", {"scriptId": script_id, "query": "console"})
    await traffic.call(
        top,
        "Debugger.getPossibleBreakpoints",
        {
            "start": {"scriptId": script_id, "lineNumber": 60},
            "end": {"scriptId": script_id, "lineNumber": 70},
        },
    )
    breakpoint_ = await traffic.call(
        top,
        "Debugger.setBreakpoint",
        {"location": {"scriptId": script_id, "lineNumber": 62}, "condition": "false"},
    )
    await traffic.call(top, "Debugger.removeBreakpoint", {"breakpointId": breakpoint_["breakpointId"]})
    await traffic.call(top, "Debugger.setBlackboxPatterns", {"patterns": ["vendor\\.js$"]})

    # Pause in a function, look around, resume.
    since = len(traffic.log)
    async with trio.open_nursery() as nursery:
        pausing = {
            "expression": "(function paused(a) { const local = {a}; debugger; return local.a; })(21)",
            "returnByValue": True,
        }
        nursery.start_soon(traffic.call, top, "Runtime.evaluate", pausing)
        paused = await traffic.event("Debugger.paused", session=top, since=since)
        frame = paused["callFrames"][0]
        await traffic.call(
            top,
            "Debugger.evaluateOnCallFrame",
            {"callFrameId": frame["callFrameId"], "expression": "local", "generatePreview": True},
        )
        for scope in frame["scopeChain"][:2]:
            await traffic.call(
                top, "Runtime.getProperties", {"objectId": scope["object"]["objectId"], "ownProperties": True}
            )
        await traffic.call(top, "Debugger.resume")
    await traffic.event("Debugger.resumed", session=top, since=since)

    # Profiler, coverage, heap.
    await traffic.call(top, "Profiler.setSamplingInterval", {"interval": 100})
    await traffic.call(top, "Profiler.start")
    await traffic.call(top, "Profiler.startPreciseCoverage", {"callCount": True, "detailed": True})
    await traffic.call(
        top,
        "Runtime.evaluate",
        {"expression": "let s = 0; for (let i = 0; i < 1e5; i++) s += i; console.profile?.(); s"},
    )
    await traffic.call(top, "Profiler.takePreciseCoverage")
    await traffic.call(top, "Profiler.stopPreciseCoverage")
    await traffic.call(top, "Profiler.getBestEffortCoverage")
    await traffic.call(top, "Profiler.stop")
    await traffic.call(
        top, "Runtime.evaluate", {"expression": "console.profile('named'); console.profileEnd('named')"}
    )
    await traffic.event("Profiler.consoleProfileFinished", session=top)
    await traffic.call(top, "HeapProfiler.collectGarbage")
    # Heap object ids exist while objects are tracked; stopping takes a snapshot (addHeapSnapshotChunk).
    since = len(traffic.log)
    await traffic.call(top, "HeapProfiler.startTrackingHeapObjects", {"trackAllocations": False})
    body = await traffic.call(top, "Runtime.evaluate", {"expression": "document.body"})
    heap = await traffic.call(top, "HeapProfiler.getHeapObjectId", {"objectId": body["result"]["objectId"]})
    await traffic.call(
        top, "HeapProfiler.getObjectByHeapObjectId", {"objectId": heap["heapSnapshotObjectId"]}
    )
    await traffic.call(top, "HeapProfiler.stopTrackingHeapObjects", {"reportProgress": True})
    await traffic.event("HeapProfiler.addHeapSnapshotChunk", session=top, since=since)
    await traffic.call(top, "HeapProfiler.startSampling", {"samplingInterval": 4096})
    await traffic.call(
        top, "Runtime.evaluate", {"expression": "Array.from({length: 1000}, (_, i) => ({i})).length"}
    )
    await traffic.call(top, "HeapProfiler.getSamplingProfile")
    await traffic.call(top, "HeapProfiler.stopSampling")
    await traffic.call(top, "Memory.getDOMCounters")
    await traffic.call(top, "Memory.getSamplingProfile")
    await traffic.call(top, "Performance.getMetrics")


async def _network_and_storage(
    browser: Browser, top: Session, server: str, tree: Raw, traffic: Traffic
) -> None:
    main_frame = tree["frameTree"]["frame"]["id"]
    json_response = await traffic.event(
        "Network.responseReceived",
        lambda p: p["response"]["url"] == f"{server}/real_traffic.json" and p["type"] == "Fetch",
        session=top,
    )
    await traffic.event("Network.loadingFinished", lambda p: p["requestId"] == json_response["requestId"])
    await traffic.call(top, "Network.getResponseBody", {"requestId": json_response["requestId"]})
    await traffic.call(
        top, "Network.searchInResponseBody", {"requestId": json_response["requestId"], "query": "greeting"}
    )
    css = await traffic.event(
        "Network.responseReceived", lambda p: p["response"]["url"].endswith("/real_traffic.css"), session=top
    )
    await traffic.event("Network.loadingFinished", lambda p: p["requestId"] == css["requestId"])
    await traffic.call(top, "Network.getResponseBody", {"requestId": css["requestId"]})
    svg = await traffic.event(
        "Network.responseReceived", lambda p: p["response"]["url"].endswith("/real_traffic.svg"), session=top
    )
    await traffic.event("Network.loadingFinished", lambda p: p["requestId"] == svg["requestId"])
    await traffic.call(top, "Network.getResponseBody", {"requestId": svg["requestId"]})
    post = await traffic.event(
        "Network.requestWillBeSent", lambda p: p["request"]["method"] == "POST", session=top
    )
    await traffic.call(top, "Network.getRequestPostData", {"requestId": post["requestId"]})
    await traffic.call(top, "Network.getCookies")
    await traffic.call(top, "Network.getCookies", {"urls": [server]})
    await traffic.call(top, "Network.getAllCookies")
    await traffic.call(
        top,
        "Network.setCookie",
        {"name": "set_by_test", "value": "1", "url": server, "httpOnly": True, "sameSite": "Strict"},
    )
    await traffic.call(
        top,
        "Network.setCookies",
        {"cookies": [{"name": "many", "value": "2", "domain": "127.0.0.1", "path": "/", "expires": 2e9}]},
    )
    await traffic.call(top, "Network.getCookies", {"urls": [server]})
    await traffic.call(top, "Network.deleteCookies", {"name": "set_by_test", "url": server})
    await traffic.call(top, "Network.setExtraHTTPHeaders", {"headers": {"X-Real-Traffic": "yes"}})
    await traffic.call(top, "Network.setCacheDisabled", {"cacheDisabled": True})
    await traffic.call(
        top, "Network.setUserAgentOverride", {"userAgent": "real-traffic/1.0", "acceptLanguage": "fr"}
    )
    await traffic.call(top, "Network.getSecurityIsolationStatus", {"frameId": main_frame})
    await traffic.call(top, "Network.fetchSchemefulSite", {"origin": server})
    await traffic.call(top, "Network.getCertificate", {"origin": server})
    loaded = await traffic.call(
        top,
        "Network.loadNetworkResource",
        {
            "frameId": main_frame,
            "url": f"{server}/real_traffic.json",
            "options": {"disableCache": False, "includeCredentials": True},
        },
    )
    stream = loaded["resource"]["stream"]
    await traffic.call(top, "IO.read", {"handle": stream})
    await traffic.call(top, "IO.close", {"handle": stream})
    await traffic.call(
        top, "Network.setBlockedURLs", {"urlPatterns": [{"urlPattern": f"{server}/blocked*", "block": True}]}
    )
    # A request made now carries the extra header and user agent (Network.requestWillBeSentExtraInfo).
    since = len(traffic.log)
    await traffic.call(
        top,
        "Runtime.evaluate",
        {"expression": "fetch('real_traffic.json?again').then(r => r.status)", "awaitPromise": True},
    )
    await traffic.event("Network.loadingFinished", session=top, since=since)
    await traffic.call(top, "Network.setBlockedURLs", {"urlPatterns": []})
    await traffic.call(top, "Network.setCacheDisabled", {"cacheDisabled": False})

    b = browser.session
    await traffic.call(b, "Storage.getCookies")
    await traffic.call(top, "Storage.getStorageKey", {"frameId": main_frame})
    await traffic.call(top, "Storage.getUsageAndQuota", {"origin": server})
    await traffic.call(
        top,
        "DOMStorage.getDOMStorageItems",
        {"storageId": {"securityOrigin": server, "isLocalStorage": True}},
    )
    await traffic.call(
        top,
        "DOMStorage.setDOMStorageItem",
        {"storageId": {"securityOrigin": server, "isLocalStorage": False}, "key": "k", "value": "v"},
    )
    await traffic.event("DOMStorage.domStorageItemAdded", session=top)
    await traffic.event("Network.webSocketCreated", session=top)


async def _emulation_and_input(top: Session, traffic: Traffic) -> None:
    steps: list[tuple[str, Raw]] = [
        (
            "Emulation.setDeviceMetricsOverride",
            {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False},
        ),
        (
            "Emulation.setEmulatedMedia",
            {"media": "print", "features": [{"name": "prefers-color-scheme", "value": "dark"}]},
        ),
        ("Emulation.setTimezoneOverride", {"timezoneId": "Europe/Paris"}),
        ("Emulation.setLocaleOverride", {"locale": "fr-FR"}),
        ("Emulation.setFocusEmulationEnabled", {"enabled": True}),
        ("Emulation.setTouchEmulationEnabled", {"enabled": False}),
        ("Emulation.setCPUThrottlingRate", {"rate": 1}),
        ("Emulation.setScrollbarsHidden", {"hidden": True}),
        ("Emulation.setEmulatedMedia", {"media": ""}),
        ("Emulation.setLocaleOverride", {}),
        ("Emulation.clearDeviceMetricsOverride", {}),
        ("Emulation.canEmulate", {}),
        ("Page.getLayoutMetrics", {}),
    ]
    for method, params in steps:
        await traffic.call(top, method, params)

    box = await traffic.call(top, "Runtime.evaluate", {"expression": _CENTER_OF_GO, "returnByValue": True})
    x, y = box["result"]["value"]
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        await traffic.call(
            top, "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
        )
    await traffic.call(
        top, "Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": 40}
    )
    clicked = await traffic.call(
        top,
        "Runtime.evaluate",
        {"expression": "document.getElementById('go').dataset.clicked", "returnByValue": True},
    )
    assert clicked["result"]["value"] == "yes"
    await traffic.call(top, "Runtime.evaluate", {"expression": _FOCUS_NAME_AT_END})
    await traffic.call(
        top, "Input.dispatchKeyEvent", {"type": "keyDown", "key": "a", "code": "KeyA", "text": "a"}
    )
    await traffic.call(top, "Input.dispatchKeyEvent", {"type": "keyUp", "key": "a", "code": "KeyA"})
    await traffic.call(top, "Input.insertText", {"text": " typed"})
    typed = await traffic.call(
        top,
        "Runtime.evaluate",
        {"expression": "document.getElementById('name').value", "returnByValue": True},
    )
    assert typed["result"]["value"] == "xa typed"


_CENTER_OF_GO = """(() => {
  const r = document.getElementById('go').getBoundingClientRect();
  return [r.x + r.width / 2, r.y + r.height / 2];
})()"""

_INSERT_RULE = """[...document.styleSheets].find(s => s.href?.endsWith('/real_traffic.css'))
  .insertRule('i { color: blue; }')"""

_FOCUS_NAME_AT_END = """(() => {
  const input = document.getElementById('name');
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
})()"""


async def _storage_and_more(
    browser: Browser, page: Page, tree: Raw, downloads: Path, traffic: Traffic
) -> None:
    """IndexedDB, Cache Storage, WebAudio, a download, a popup, event listeners, layers, WebAuthn."""
    top, b = page.session, browser.session
    main_frame = tree["frameTree"]["frame"]["id"]
    key = (await traffic.call(top, "Storage.getStorageKey", {"frameId": main_frame}))["storageKey"]
    since = len(traffic.log)
    await traffic.call(top, "Runtime.evaluate", {"expression": "store()", "awaitPromise": True})
    await traffic.event("Storage.indexedDBListUpdated", session=top, since=since)
    await traffic.event("Storage.indexedDBContentUpdated", session=top, since=since)
    await traffic.event("Storage.cacheStorageListUpdated", session=top, since=since)
    database = {"storageKey": key, "databaseName": "real-traffic-db"}
    await traffic.call(top, "IndexedDB.requestDatabaseNames", {"storageKey": key})
    await traffic.call(top, "IndexedDB.requestDatabase", database)
    await traffic.call(
        top,
        "IndexedDB.requestData",
        {**database, "objectStoreName": "store", "skipCount": 0, "pageSize": 10},
    )
    await traffic.call(
        top,
        "IndexedDB.requestData",
        {
            **database,
            "objectStoreName": "store",
            "indexName": "by_name",
            "skipCount": 0,
            "pageSize": 10,
            "keyRange": {"lower": {"type": "string", "string": "a"}, "lowerOpen": False, "upperOpen": True},
        },
    )
    await traffic.call(top, "IndexedDB.getMetadata", {**database, "objectStoreName": "store"})
    caches = await traffic.call(top, "CacheStorage.requestCacheNames", {"storageKey": key})
    cache_id = caches["caches"][0]["cacheId"]
    await traffic.call(
        top, "CacheStorage.requestEntries", {"cacheId": cache_id, "skipCount": 0, "pageSize": 10}
    )
    await traffic.call(
        top,
        "CacheStorage.requestCachedResponse",
        {"cacheId": cache_id, "requestURL": f"{key}cached.txt", "requestHeaders": []},
    )
    await traffic.event("ServiceWorker.workerVersionUpdated", session=top)
    await traffic.event("ServiceWorker.workerRegistrationUpdated", session=top)

    since = len(traffic.log)
    await traffic.call(top, "Runtime.evaluate", {"expression": "audio()", "userGesture": True})
    audio = await traffic.event("WebAudio.contextCreated", session=top, since=since)
    await traffic.event("WebAudio.nodesConnected", session=top, since=since)
    await traffic.call(top, "Runtime.evaluate", {"expression": "audioContext.resume()", "awaitPromise": True})
    await traffic.call(top, "WebAudio.getRealtimeData", {"contextId": audio["context"]["contextId"]})

    since = len(traffic.log)
    await traffic.call(
        b,
        "Browser.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": str(downloads), "eventsEnabled": True},
    )
    await traffic.call(top, "Runtime.evaluate", {"expression": "download()", "userGesture": True})
    await traffic.event("Browser.downloadWillBegin", session=b, since=since)
    await traffic.event(
        "Browser.downloadProgress", lambda p: p["state"] == "completed", session=b, since=since
    )

    since = len(traffic.log)
    await traffic.call(
        top,
        "Runtime.evaluate",
        {"expression": "window.open('real_traffic_frame.html', 'popup') && 'opened'", "userGesture": True},
    )
    await traffic.event("Page.windowOpen", session=top, since=since)
    popup = await traffic.event(
        "Target.targetCreated",
        lambda p: p["targetInfo"].get("openerId") == page.target_id,
        session=b,
        since=since,
    )
    popup_id = popup["targetInfo"]["targetId"]
    await traffic.call(b, "Target.closeTarget", {"targetId": popup_id})
    await traffic.event("Target.targetDestroyed", lambda p: p["targetId"] == popup_id, session=b, since=since)

    go = await traffic.call(top, "Runtime.evaluate", {"expression": "document.getElementById('go')"})
    await traffic.call(top, "DOMDebugger.getEventListeners", {"objectId": go["result"]["objectId"]})
    window = await traffic.call(top, "Runtime.evaluate", {"expression": "window"})
    await traffic.call(
        top,
        "DOMDebugger.getEventListeners",
        {"objectId": window["result"]["objectId"], "depth": 1, "pierce": True},
    )

    since = len(traffic.log)
    await traffic.call(top, "LayerTree.enable")
    layers = await traffic.event("LayerTree.layerTreeDidChange", lambda p: bool(p.get("layers")), since=since)
    await traffic.call(top, "LayerTree.compositingReasons", {"layerId": layers["layers"][0]["layerId"]})
    await traffic.call(top, "LayerTree.disable")

    since = len(traffic.log)
    await traffic.call(
        top, "Runtime.evaluate", {"expression": "inspect(document.body)", "includeCommandLineAPI": True}
    )
    await traffic.event("Runtime.inspectRequested", session=top, since=since)
    await traffic.call(
        top, "Runtime.evaluate", {"expression": "document.getElementById('spin').classList.remove('spin')"}
    )
    await traffic.event("Animation.animationCanceled", session=top, since=since)

    await traffic.call(top, "WebAuthn.enable")
    authenticator = await traffic.call(
        top,
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "usb",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
            }
        },
    )
    await traffic.call(top, "WebAuthn.getCredentials", {"authenticatorId": authenticator["authenticatorId"]})
    await traffic.call(
        top, "WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticator["authenticatorId"]}
    )
    await traffic.call(top, "WebAuthn.disable")


async def _tracing(browser: Browser, top: Session, traffic: Traffic) -> None:
    b = browser.session
    await traffic.call(b, "Tracing.getCategories")
    since = len(traffic.log)
    await traffic.call(
        b,
        "Tracing.start",
        {
            "traceConfig": {"includedCategories": ["devtools.timeline", "v8.execute"]},
            "transferMode": "ReportEvents",
            "bufferUsageReportingInterval": 50,
        },
    )
    await traffic.call(top, "Runtime.evaluate", {"expression": "document.body.offsetHeight"})
    await traffic.call(b, "Tracing.end")
    await traffic.event("Tracing.tracingComplete", session=b, since=since)


async def _leave_and_come_back(page: Page, server: str, traffic: Traffic) -> None:
    """Leave (the iframe and worker sessions detach), then go back in history."""
    top = page.session
    history = await traffic.call(top, "Page.getNavigationHistory")
    back_to = history["entries"][history["currentIndex"]]["id"]
    since = len(traffic.log)
    await page.goto(f"{server}/real_traffic_frame.html")
    await traffic.event("Target.detachedFromTarget", session=top, since=since)
    since = len(traffic.log)
    await traffic.call(top, "Page.navigateToHistoryEntry", {"entryId": back_to})
    await traffic.event(
        "Page.frameNavigated", lambda p: "parentId" not in p["frame"], session=top, since=since
    )
    await traffic.event("Page.frameStoppedLoading", lambda p: p["frameId"] == page.target_id, since=since)


async def test_a_null_call_argument_re_encodes_as_null(browser: Browser) -> None:
    """``{"value": null}`` is a real argument (Puppeteer sends it); the typed command must keep it."""
    with trio.fail_after(20):
        page = await browser.new_page()
        window = await page.session.execute_raw("Runtime.evaluate", {"expression": "window"})
        params = {
            "functionDeclaration": "function (a) { return a === null ? 'null' : typeof a; }",
            "objectId": window["result"]["objectId"],
            "arguments": [{"value": None}],
            "returnByValue": True,
        }
        raw = await page.session.execute_raw("Runtime.callFunctionOn", params)
        assert raw["result"]["value"] == "null"
        command = cdp.decode_command("Runtime.callFunctionOn", params)
        typed = await page.session.execute(command)
        assert typed.result.value == "null", (
            f"the page saw {typed.result.value}; re-encoded as {command.params}"
        )
