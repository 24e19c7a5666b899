"""WebArena / BrowserGym action strings on a page: ``await engine.webarena.execute(page, "click [1234]")``.

The ids are the ones ``page.snapshot(format="webarena")`` prints (``[1234] button 'Save'``); an id goes
through the same identity check as a ref (``page.resolve``), so an element that changed since the snapshot
raises ``StaleRefError`` instead of acting on whatever now sits there.

The actions (``[...]`` are literal brackets around each argument)::

    click [id]                      hover [id]
    type [id] [text] [press_enter_after=0|1]     (press_enter_after defaults to 1, as in WebArena)
    press [key_comb]                e.g. press [Control+a], press [Enter]
    scroll [up|down]
    goto [url]      go_back         go_forward
    new_tab         tab_focus [index]            close_tab
    stop [answer]                   the agent's final answer: nothing is done, the answer is returned

Ids and indexes are ASCII digits. Text, a URL and an answer run to the last ``]`` (for ``type``: the one
before a final ``[0]``/``[1]``), as WebArena's own parser reads them: ``type [12] [a] [b]`` types
``a] [b``, so text may hold brackets. A ``press`` key is checked as ``page.press`` would check it, and a
``goto`` URL whose scheme is ``javascript:`` once a browser's URL parser has cleaned it is refused.

:func:`parse` turns a string into an :class:`Action` without I/O (tools can check strings ahead); a
malformed string raises ``ValueError`` quoting the bad part and the expected form.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

import attrs

from engine._keys import parse_combo
from engine.steps import PAGE_SCHEMES

if TYPE_CHECKING:
    from engine._page import Page

__all__ = ["FORMS", "Action", "Executed", "execute", "parse"]

FORMS: dict[str, str] = {
    "click": "click [id]",
    "hover": "hover [id]",
    "type": "type [id] [text] [press_enter_after=0|1]",
    "press": "press [key_comb]",
    "scroll": "scroll [up|down]",
    "goto": "goto [url]",
    "new_tab": "new_tab",
    "go_back": "go_back",
    "go_forward": "go_forward",
    "tab_focus": "tab_focus [index]",
    "close_tab": "close_tab",
    "stop": "stop [answer]",
}
"""The expected form of each action, as error messages quote it."""


@attrs.frozen(kw_only=True)
class Action:
    """One parsed action string; only the fields its ``name`` uses are set."""

    name: str
    id: str | None = None
    text: str | None = None
    press_enter_after: bool = False
    key: str | None = None
    direction: Literal["up", "down"] | None = None
    url: str | None = None
    index: int | None = None
    answer: str | None = None


@attrs.frozen(kw_only=True)
class Executed:
    """What :func:`execute` did: the action, the page to go on with (another tab after ``new_tab``,
    ``tab_focus`` or ``close_tab``; None when the last tab was closed), and the answer of ``stop``."""

    action: Action
    page: Page | None
    answer: str | None = None


_NAME = re.compile(r"\s*([A-Za-z_]+)")
_NUMBER = re.compile(r"[0-9]+")  # str.isdigit() also takes "²" and "١٢", which are no id

# What a URL parser (WHATWG, and Chromium's GURL) drops before it reads the scheme: C0 controls and spaces
# at either end, tabs and newlines anywhere. "java\tscript:..." is a javascript: URL to Chromium.
_URL_ENDS = "".join(map(chr, range(0x21)))
_URL_DROPPED = re.compile(r"[\t\n\r]")


def _refused(url: str) -> str:
    """Why ``url`` may not be loaded ("" if it may): its scheme, as a browser reads it, is not a page's
    (``engine.steps.PAGE_SCHEMES``)."""
    scheme, colon, _ = _URL_DROPPED.sub("", url.strip(_URL_ENDS)).partition(":")
    scheme = scheme.lower() if colon and scheme.isascii() else ""
    if scheme in PAGE_SCHEMES:
        return ""
    if scheme == "javascript":
        return "javascript: would run a script; give a page URL"
    if not scheme:
        return "give a whole URL, with its scheme (http://...)"
    return f"{scheme}: is not a page's scheme; give an http:, https:, file:, data: or about: URL"


def _bad(action: str, part: str, name: str, why: str = "") -> ValueError:
    expected = FORMS.get(name)
    form = f"expected {expected!r}" if expected else f"expected one of: {', '.join(FORMS.values())}"
    shown = part if len(part) <= 80 else part[:77] + "..."
    whole = action if len(action) <= 160 else action[:157] + "..."
    return ValueError(f"cannot read {shown!r} in the action {whole!r}{why}: {form}")


def _args(action: str, name: str, rest: str) -> list[str]:
    """The bracketed arguments after the name; the last one may hold brackets of its own (text, answers)."""
    args: list[str] = []
    i = 0
    while i < len(rest):
        if rest[i].isspace():
            i += 1
            continue
        if rest[i] != "[":
            raise _bad(action, rest[i:].strip(), name, " (each argument goes in [brackets])")
        if name in ("type", "stop", "goto") and len(args) == (1 if name == "type" else 0):
            # free text: up to the "]" that closes it (for type: the one before a final "[0]"/"[1]")
            tail = re.search(r"\]\s*\[\s*([0-9]+)\s*\]\s*$", rest[i:]) if name == "type" else None
            end = i + tail.start() if tail else rest.rfind("]")
            if end < i:
                raise _bad(action, rest[i:], name, " (no closing ']')")
            args.append(rest[i + 1 : end])
            if tail:
                args.append(tail.group(1))
                return args
            i = end + 1
            continue
        end = rest.find("]", i)
        if end < 0:
            raise _bad(action, rest[i:], name, " (no closing ']')")
        args.append(rest[i + 1 : end].strip())
        i = end + 1
    return args


def parse(action: str) -> Action:
    """Read one action string (see the module docstring for the forms).

    Raises:
        ValueError: the string is not one of the forms; the message quotes the bad part and the form.
    """
    if not isinstance(action, str):
        raise TypeError(f"an action is a string such as 'click [12]', not {type(action).__name__}")
    match = _NAME.match(action)
    if match is None:
        raise _bad(action, action.strip() or action, "")
    name = match.group(1).lower()
    if name not in FORMS:
        raise _bad(action, match.group(1), "", " (unknown action)")
    args = _args(action, name, action[match.end() :])
    want = {"new_tab": 0, "go_back": 0, "go_forward": 0, "close_tab": 0}.get(name, 1)
    if name == "type":
        if len(args) not in (2, 3):
            raise _bad(action, action.strip(), name, f" ({len(args)} argument(s))")
    elif name == "stop":
        if len(args) > 1:
            raise _bad(action, action.strip(), name, f" ({len(args)} arguments)")
    elif len(args) != want:
        raise _bad(action, action.strip(), name, f" ({len(args)} argument(s), {want} expected)")
    if name in ("click", "hover", "type"):
        if not _NUMBER.fullmatch(args[0]):
            raise _bad(
                action, f"[{args[0]}]", name, " (the id is the number snapshot(format='webarena') prints)"
            )
        if name != "type":
            return Action(name=name, id=args[0])
        enter = True if len(args) == 2 else args[2] == "1"
        if len(args) == 3 and args[2] not in ("0", "1"):
            raise _bad(action, f"[{args[2]}]", name, " (press_enter_after is 0 or 1)")
        return Action(name=name, id=args[0], text=args[1], press_enter_after=enter)
    if name == "press":
        if not args[0]:
            raise _bad(action, "[]", name, " (no key)")
        try:  # as page.press would refuse it, but before anything ran
            parse_combo(args[0])
        except ValueError as exc:
            raise _bad(action, f"[{args[0]}]", name, f" ({exc})") from None
        return Action(name=name, key=args[0])
    if name == "scroll":
        direction = args[0].lower().removeprefix("direction=")
        if direction == "up":
            return Action(name=name, direction="up")
        if direction == "down":
            return Action(name=name, direction="down")
        raise _bad(action, f"[{args[0]}]", name)
    if name == "goto":
        url = args[0].strip()
        if not url:
            raise _bad(action, "[]", name, " (no URL)")
        if why := _refused(url):
            raise _bad(action, f"[{args[0]}]", name, f" ({why})")
        return Action(name=name, url=url)
    if name == "tab_focus":
        if not _NUMBER.fullmatch(args[0]) or len(args[0]) > 9:  # int() refuses over 4300 digits
            raise _bad(action, f"[{args[0]}]", name, " (the index is a whole number from 0)")
        return Action(name=name, index=int(args[0]))
    if name == "stop":
        return Action(name=name, answer=args[0] if args else "")
    return Action(name=name)


async def execute(page: Page, action: str | Action) -> Executed:
    """Run one action string on ``page`` under the caller's deadline (``trio.fail_after``).

    Raises:
        ValueError: a malformed string (nothing was done).
        StaleRefError: the id no longer names the element it named in the snapshot.
        ActionError, NavigationError: the action could not be done.
    """
    act = parse(action) if isinstance(action, str) else action
    name = act.name
    if name == "click":
        await page.click(_id(act))
    elif name == "hover":
        await page.hover(_id(act))
    elif name == "type":
        await page.type(_id(act), act.text or "")
        if act.press_enter_after:
            await page.press("Enter", ref=_id(act))
    elif name == "press":
        await page.press(act.key or "")
    elif name == "scroll":
        await page.scroll(direction=act.direction or "down")
    elif name == "goto":
        if why := _refused(act.url or ""):  # an Action built by hand skipped parse()
            raise ValueError(f"goto {act.url!r}: {why}")
        await page.goto(act.url or "")
    elif name == "go_back":
        await page.back()
    elif name == "go_forward":
        await page.forward()
    elif name == "new_tab":
        return Executed(action=act, page=await page.browser.new_page())
    elif name == "tab_focus":
        pages = page.browser.pages
        if act.index is None or not 0 <= act.index < len(pages):
            raise ValueError(
                f"tab_focus [{act.index}]: there are {len(pages)} tab(s) (indexes 0 to {len(pages) - 1})"
            )
        focused = pages[act.index]
        await focused.session.execute_raw("Page.bringToFront")
        return Executed(action=act, page=focused)
    elif name == "close_tab":
        browser = page.browser
        await page.close()
        rest = browser.pages
        if rest:
            await rest[-1].session.execute_raw("Page.bringToFront")
        return Executed(action=act, page=rest[-1] if rest else None)
    elif name == "stop":
        return Executed(action=act, page=page, answer=act.answer)
    return Executed(action=act, page=page)


def _id(act: Action) -> str:
    assert act.id is not None
    return act.id
