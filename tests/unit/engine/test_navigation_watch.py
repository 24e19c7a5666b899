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


def started(frame: str, kind: str) -> tuple[str, dict[str, str]]:
    return "Page.frameStartedNavigating", {"frameId": frame, "navigationType": kind}


def test_a_history_move_is_waited_for_though_no_request_comes() -> None:
    """history.back() in a handler: Chromium sends frameStartedNavigating, and no frameRequestedNavigation."""
    watch = NavigationWatch("MAIN")
    watch(*started("MAIN", "historyDifferentDocument"))
    watch.input_handled = True
    assert watch.pending == {"MAIN"}
    watch(*navigated("MAIN"))
    assert watch.pending == {"MAIN"}  # committed, not parsed yet
    watch(*parsed("MAIN"))
    assert watch.pending == set()


def test_a_page_the_back_forward_cache_restores_ends_at_its_commit() -> None:
    """A kept document sends no DOMContentLoaded: it was parsed long ago."""
    watch = NavigationWatch("MAIN")
    watch(*started("MAIN", "historyDifferentDocument"))
    watch.input_handled = True
    watch("Page.frameNavigated", {"frame": {"id": "MAIN"}, "type": "BackForwardCacheRestore"})
    assert watch.pending == set()


def test_the_start_of_a_requested_navigation_is_not_counted_twice() -> None:
    """Every other navigation comes with its request; its start then adds nothing, and a same-document
    one nothing at all."""
    watch = NavigationWatch("MAIN")
    watch(*started("IFRAME", "differentDocument"))
    watch(*started("MAIN", "historySameDocument"))
    assert watch.pending == set()
    watch(*requested("A"))
    watch.input_handled = True
    for _ in range(FOLLOWED_NAVIGATIONS):
        watch(*requested("B"))
        watch(*started("B", "historyDifferentDocument"))
    assert watch.pending == {"A", "B"}


def test_a_frame_that_moves_to_another_process_is_waited_for_there() -> None:
    """A same-site iframe sent cross-site: its old process lets go ("swap") at the commit, before the new
    document is parsed in the new process (whose session reports it); that ended the wait (3 runs of 30)."""
    watch = NavigationWatch("MAIN")
    watch(*requested("IFRAME"))
    watch.input_handled = True
    watch(*navigated("IFRAME", "MAIN"))  # on the new out-of-process session
    watch("Page.frameDetached", {"frameId": "IFRAME", "reason": "swap"})  # on the page's own
    assert watch.pending == {"IFRAME"}
    watch(*parsed("IFRAME"))
    assert watch.pending == set()


def test_a_document_that_moves_on_is_not_taken_for_the_next_one() -> None:
    """A script in the new document asks for another before it is parsed (location.replace): the first
    one's DOMContentLoaded, or the one a new process replays for its empty document as its session turns
    lifecycle events on, ended the wait before the last document came (10 runs of 60)."""
    for handled_before in (False, True):
        watch = NavigationWatch("MAIN")
        watch(*requested("IFRAME"))
        watch.input_handled = handled_before
        watch(*navigated("IFRAME", "MAIN"))
        watch(*requested("IFRAME"))
        watch.input_handled = True
        watch(*parsed("IFRAME"))
        assert watch.pending == {"IFRAME"}
        watch(*navigated("IFRAME", "MAIN"))
        watch(*parsed("IFRAME"))
        assert watch.pending == set()
