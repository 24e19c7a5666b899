"""The session table on its own: plain functions, no trio run, no browser.

Sessions are real (the table creates them on a real, never-opened Connection); the fake transport's
outbox shows the fire-and-forget commands the table sends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import cdp
from engine import Session, SessionDetached, Subscription, TargetCrashed
from engine.lowlevel import DEFAULT_SETTINGS, Connection, SessionTable
from engine.testing import FakeTransport


@pytest.fixture
def table() -> SessionTable:
    return Connection._create(FakeTransport(), DEFAULT_SETTINGS).sessions


def sent(table: SessionTable) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in table.browser.connection._outbox]


def attach(table: SessionTable, parent: Session, session_id: str, kind: str = "iframe", **extra: Any) -> None:
    info = {"targetId": f"T-{session_id}", "type": kind, "url": f"https://{session_id}.test/"}
    params = {"sessionId": session_id, "targetInfo": info, **extra}
    table.follow(parent, "Target.attachedToTarget", params)
    table.resume_attached()  # as the reader does, once the parent's hooks have seen the attach


def test_the_browser_session_is_there_from_the_start(table: SessionTable) -> None:
    assert table.get(None) is table.browser
    assert table.browser.target_type == "browser"
    assert len(table) == 1
    assert table.statistics().attached == 0


def test_create_registers_under_the_parent_and_is_idempotent(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", url="about:blank", parent=table.browser)
    assert table.create("P", target_id="TP", target_type="page", parent=table.browser) is page
    assert table.browser.children == {"P": page}
    assert page.frame_id == "TP"  # a page's main frame id is its target id
    assert table.by_target("TP") == [page]


def test_a_child_of_a_page_is_set_up_then_resumed(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    seen: list[tuple[str, int]] = []
    table.on_attach = lambda child: seen.append((child.session_id or "", len(sent(table))))
    attach(table, page, "F", "iframe", waitingForDebugger=True)
    child = table.get("F")
    assert child is not None
    assert (child.target_type, child.url, child.frame_id, child.parent) == (
        "iframe",
        "https://F.test/",
        "T-F",
        page,
    )
    assert page.children == {"F": child}
    methods = [(m["method"], m.get("sessionId")) for m in sent(table)]
    assert methods == [("Target.setAutoAttach", "F"), ("Runtime.runIfWaitingForDebugger", "F")]
    assert seen == [("F", 1)]  # the hook ran after auto-attach was sent and before the resume


def test_a_worker_gets_auto_attach_for_its_own_workers_then_is_resumed(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    attach(table, page, "W", "worker", waitingForDebugger=True)
    worker = table.get("W")
    assert worker is not None
    assert worker.frame_id is None
    assert [m["method"] for m in sent(table)] == ["Target.setAutoAttach", "Runtime.runIfWaitingForDebugger"]


def test_a_service_worker_is_resumed_without_auto_attach(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    attach(table, page, "SW", "service_worker", waitingForDebugger=True)
    assert [m["method"] for m in sent(table)] == ["Runtime.runIfWaitingForDebugger"]


def test_attached_at_browser_level_is_left_to_whoever_asked(table: SessionTable) -> None:
    attach(table, table.browser, "P", "page", waitingForDebugger=True)
    assert table.get("P") is not None
    assert sent(table) == []


def test_a_failing_on_attach_hook_still_resumes_the_child(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)

    def broken(child: Session) -> None:
        raise RuntimeError("hook bug")

    table.on_attach = broken
    attach(table, page, "W", "worker", waitingForDebugger=True)
    assert [m["method"] for m in sent(table)][-1] == "Runtime.runIfWaitingForDebugger"


def test_detach_ends_the_session_and_its_children(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    attach(table, page, "F")
    frame = table.get("F")
    assert frame is not None
    table.follow(table.browser, "Target.detachedFromTarget", {"sessionId": "P", "targetId": "TP"})
    assert page.detached
    assert frame.detached
    assert table.get("P") is None
    assert table.get("F") is None
    assert table.browser.children == {}
    assert table.statistics().detached == 2
    with pytest.raises(SessionDetached, match="parent session P"):
        frame.raise_if_unusable("Runtime.evaluate")


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("Target.targetDestroyed", {}),
        ("Target.targetDestroyed", {"targetId": None}),
        ("Target.detachedFromTarget", {"targetId": "X"}),
        ("Target.detachedFromTarget", {"sessionId": None}),
        ("Target.targetCrashed", {"status": "x", "errorCode": 1}),
        ("Target.targetInfoChanged", {"targetInfo": {"url": "https://odd.test/"}}),
    ],
)
def test_an_event_that_names_no_session_leaves_the_browsers_alone(
    table: SessionTable, method: str, params: dict[str, Any]
) -> None:
    """The browser's session has no id and no target: a missing id must not be read as naming it."""
    table.follow(table.browser, method, params)
    assert not table.browser.detached
    assert not table.browser.crashed
    assert table.browser.url == ""
    table.browser.raise_if_unusable("Browser.getVersion")


def test_target_destroyed_detaches_every_session_of_the_target(table: SessionTable) -> None:
    first = table.create("A", target_id="T", target_type="page", parent=table.browser)
    second = table.create("B", target_id="T", target_type="page", parent=table.browser)
    table.follow(table.browser, "Target.targetDestroyed", {"targetId": "T"})
    assert first.detached
    assert second.detached
    assert len(table) == 1


def test_a_crash_reported_twice_counts_once_and_a_reload_revives(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    attach(table, page, "F")
    table.follow(page, "Inspector.targetCrashed", {})
    table.follow(
        table.browser, "Target.targetCrashed", {"targetId": "TP", "status": "crashed", "errorCode": 5}
    )
    assert table.statistics().crashed == 2  # the page and its frame, once each
    with pytest.raises(TargetCrashed):
        page.raise_if_unusable("Runtime.evaluate")
    page.raise_if_unusable("Page.reload")
    table.follow(page, "Inspector.targetReloadedAfterCrash", {})
    page.raise_if_unusable("Runtime.evaluate")
    assert table.statistics().revived == 1


def test_target_info_changes_keep_the_url_current(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", url="about:blank", parent=table.browser)
    info = {"targetId": "TP", "type": "page", "url": "https://example.test/next"}
    table.follow(table.browser, "Target.targetInfoChanged", {"targetInfo": info})
    assert page.url == "https://example.test/next"
    assert "https://example.test/next" in repr(page)


def test_inspector_detached_ends_the_session(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    table.follow(page, "Inspector.detached", {"reason": "Render process gone."})
    with pytest.raises(SessionDetached, match="Render process gone"):
        page.raise_if_unusable("Runtime.evaluate")


def test_a_session_this_client_closes_says_so(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    page._will_close("the page was closed by this client (Page.close)")
    table.follow(page, "Inspector.detached", {"reason": "Render process gone."})
    with pytest.raises(SessionDetached, match=r"closed by this client \(Page.close\)"):
        page.raise_if_unusable("Runtime.evaluate")


def test_a_session_ended_as_this_client_closes_the_browser_says_so(table: SessionTable) -> None:
    # It read "Inspector.detached: Render process gone.", as if the tab had crashed.
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    table.browser.connection.closing = "the browser was closed: its `async with launch()` block was left"
    table.follow(page, "Inspector.detached", {"reason": "Render process gone."})
    with pytest.raises(
        SessionDetached, match=r"block was left \(the browser said: Inspector.detached: Render"
    ):
        page.raise_if_unusable("Runtime.evaluate")


def test_events_the_table_does_not_follow_change_nothing(table: SessionTable) -> None:
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    table.follow(page, "Page.loadEventFired", {"timestamp": 1})
    table.follow(table.browser, "Target.attachedToTarget", {"sessionId": ["odd"]})
    assert not page.detached
    assert len(table) == 2


@pytest.mark.parametrize("cls", [Session, Subscription, Connection])
def test_sessions_subscriptions_and_connections_have_no_public_constructor(cls: type) -> None:
    with pytest.raises(TypeError, match="no public constructor"):
        cls()


def test_commands_are_still_typed_here(table: SessionTable) -> None:
    # The table's fire-and-forget sends go through the same encoder as execute().
    page = table.create("P", target_id="TP", target_type="page", parent=table.browser)
    page.execute_nowait(cdp.page.enable())
    assert sent(table)[-1] == {"id": sent(table)[-1]["id"], "method": "Page.enable", "sessionId": "P"}
