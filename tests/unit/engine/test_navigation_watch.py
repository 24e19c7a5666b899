"""The navigation watch of an action, fed the events Chromium sends: no browser, no trio run."""

from __future__ import annotations

from engine._waiting import FOLLOWED_NAVIGATIONS, NavigationWatch


def requested(frame: str) -> tuple[str, dict[str, str]]:
    return "Page.frameRequestedNavigation", {"frameId": frame, "disposition": "currentTab"}


def navigated(frame: str, parent: str | None = None) -> tuple[str, dict[str, object]]:
    info = {"id": frame} if parent is None else {"id": frame, "parentId": parent}
    return "Page.frameNavigated", {"frame": info}


def parsed(frame: str) -> tuple[str, dict[str, str]]:
    return "Page.lifecycleEvent", {"frameId": frame, "name": "DOMContentLoaded"}


def test_a_frame_whose_document_moves_the_top_is_dropped_with_the_old_document() -> None:
    """A link in an iframe loads a document that sets top.location before it is parsed: the main frame's
    new document replaces the iframe, whose DOMContentLoaded never comes (nor a frameDetached)."""
    watch = NavigationWatch("MAIN")
    watch(*requested("IFRAME"))
    watch.input_handled = True
    for event in (navigated("IFRAME", "MAIN"), requested("MAIN"), navigated("MAIN")):
        watch(*event)
    assert watch.pending == {"MAIN"}
    watch(*parsed("MAIN"))
    assert watch.pending == set()


def test_frames_that_keep_navigating_are_followed_only_so_far() -> None:
    watch = NavigationWatch("MAIN")
    for frame in ("A", "B"):
        watch(*requested(frame))
    watch.input_handled = True
    for _ in range(FOLLOWED_NAVIGATIONS + 2):
        for frame in ("A", "B"):
            watch(*requested(frame))
    assert watch.pending == set()


def test_a_frame_removed_while_it_loads_is_not_waited_for() -> None:
    watch = NavigationWatch("MAIN")
    watch(*requested("IFRAME"))
    watch.input_handled = True
    watch("Page.frameDetached", {"frameId": "IFRAME", "reason": "remove"})
    assert watch.pending == set()
