"""JavaScript dialogs (alert, confirm, prompt, beforeunload): answered at once, so they never wedge a page.

While a dialog is open its renderer runs nothing else: the click that opened it does not return, and
neither does any later command of the page. So the answer is sent from the reader as the dialog opens:
``page.on_dialog(dialog)`` decides (``dialog.accept("text")`` / ``dialog.dismiss()``); without a handler,
or when the handler decides nothing, the dialog is dismissed, except ``beforeunload``, which is accepted:
the page is left, as the navigation or close that raised it asked (Playwright and WebDriver do the same;
dismissed, it held a reload until its deadline and made a goto fail with net::ERR_ABORTED). Every dialog
is recorded in ``page.dialogs``, the last ``MAX_DIALOGS`` of them.
"""

from __future__ import annotations

import collections
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine._actionability import send_nowait
from engine._hooks import add_hook, each_frame_session, enable_once
from engine._util import attached_state

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Session

log = logging.getLogger("engine.dialogs")

MAX_DIALOGS = 100
"""Dialogs kept in ``page.dialogs`` (a page that alerts in a loop must not grow memory)."""


class Dialog:
    """One dialog the page opened: ``type`` (alert, confirm, prompt, beforeunload), ``message``, and
    what was done with it (``accepted``, ``prompt_text``) once answered."""

    def __init__(self, session: Session, params: dict[str, Any]) -> None:
        self._session = session
        self.type: str = params.get("type", "")
        self.message: str = params.get("message", "")
        self.default_prompt: str = params.get("defaultPrompt", "")
        self.url: str = params.get("url", "")
        self.accepted: bool | None = None  # None until answered
        self.prompt_text: str | None = None

    def __repr__(self) -> str:
        done = {None: "open", True: "accepted", False: "dismissed"}[self.accepted]
        return f"<Dialog {self.type} {self.message!r} {done}>"

    def accept(self, prompt_text: str | None = None) -> None:
        """OK (with ``prompt_text`` typed into a prompt; its default text if None)."""
        self._answer(True, prompt_text if prompt_text is not None else self.default_prompt)

    def dismiss(self) -> None:
        """Cancel (an alert has only OK: dismissing it closes it all the same)."""
        self._answer(False, None)

    def _answer(self, accept: bool, prompt_text: str | None) -> None:
        if self.accepted is not None:
            return  # answered already: Chromium would reject a second answer
        self.accepted = accept
        self.prompt_text = prompt_text
        params: dict[str, Any] = {"accept": accept}
        if prompt_text is not None and self.type == "prompt":
            params["promptText"] = prompt_text
        session = self._session
        if not session.detached and session.connection.closed is None:
            send_nowait(session, "Page.handleJavaScriptDialog", params)


DialogHandler = Callable[[Dialog], object]


class DialogState:
    """A page's dialog handler and the record of its dialogs."""

    def __init__(self) -> None:
        self.handler: DialogHandler | None = None
        self.seen: collections.deque[Dialog] = collections.deque(maxlen=MAX_DIALOGS)
        self.stays = 0  # beforeunload dialogs dismissed: each cancelled the navigation that raised it


def dialog_state(page: Page) -> DialogState:
    return attached_state(page, "_dialog_state", DialogState)


def watch_dialogs(page: Page) -> None:
    """Answer the page's dialogs as they open, its out-of-process iframes' too (called once per Page).

    An out-of-process iframe reports its dialogs on its own session once ``Page.enable`` is sent there,
    which is done as it attaches; without it, a dialog there would hold that frame until the tab closes.
    """

    def watch(session: Session) -> None:
        if session is not page.session:  # (the page's own has Page enabled by its set-up)
            enable_once(session, "Page.enable")
        _watch_session(page, session)

    each_frame_session(page.session, watch)


def _watch_session(page: Page, session: Session) -> None:
    state = dialog_state(page)

    def opened(method: str, params: dict[str, Any]) -> None:
        dialog = Dialog(session, params)
        state.seen.append(dialog)
        if state.handler is not None:
            try:
                answered = state.handler(dialog)
            except Exception:
                log.exception("page.on_dialog failed on %r; the default answer is given", dialog)
            else:
                if inspect.isawaitable(answered):  # a lambda calling an async function: never awaited here
                    if inspect.iscoroutine(answered):
                        answered.close()
                    log.error(
                        "page.on_dialog returned an awaitable for %r; it cannot be awaited in the "
                        "reader, so the default answer is given: give a plain function",
                        dialog,
                    )
        if dialog.accepted is None:
            if dialog.type == "beforeunload":
                dialog.accept()
            else:
                dialog.dismiss()
        if dialog.type == "beforeunload" and not dialog.accepted:
            state.stays += 1
        log.info(
            "%s dialog %r %s", dialog.type, dialog.message, "accepted" if dialog.accepted else "dismissed"
        )

    add_hook(session, ("Page.javascriptDialogOpening",), opened)


STAYED = "the page's beforeunload handler asked to stay, and page.on_dialog dismissed its dialog"
"""Why a navigation did not happen when a page was told to stay (``DialogState.stays`` went up)."""
