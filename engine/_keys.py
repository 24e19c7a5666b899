"""The key table: what ``page.press("Control+Shift+ArrowLeft")`` sends as ``Input.dispatchKeyEvent``.

Pure data and parsing, no I/O. A key is named as in ``KeyboardEvent.key`` (``Enter``, ``ArrowLeft``, ``a``,
``F5``) or by its ``KeyboardEvent.code`` (``KeyA``, ``Digit1``); a combo joins modifiers and one key with
``+``. ``Meta`` means the command key on macOS and is sent as ``Control`` elsewhere, so one script selects
all text on every platform.
"""

from __future__ import annotations

import string
import sys

import attrs

MODIFIER_BITS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}
"""``Input.dispatchKeyEvent``'s ``modifiers`` bit mask."""

_MODIFIER_ALIASES = {
    "alt": "Alt",
    "option": "Alt",
    "control": "Control",
    "ctrl": "Control",
    "meta": "Meta",
    "cmd": "Meta",
    "command": "Meta",
    "shift": "Shift",
}


@attrs.frozen(kw_only=True)
class KeyDef:
    """One physical key: ``key`` and ``code`` as in a KeyboardEvent, the Windows key code, and its text."""

    key: str
    code: str
    key_code: int
    text: str = ""
    location: int = 0


def _table() -> dict[str, KeyDef]:
    keys: dict[str, KeyDef] = {}

    def add(key: str, code: str, key_code: int, text: str = "", location: int = 0) -> None:
        keys[key] = KeyDef(key=key, code=code, key_code=key_code, text=text, location=location)

    for name, code, key_code, text in [
        ("Enter", "Enter", 13, "\r"),
        ("Tab", "Tab", 9, "\t"),
        ("Backspace", "Backspace", 8, ""),
        ("Delete", "Delete", 46, ""),
        ("Escape", "Escape", 27, ""),
        ("ArrowLeft", "ArrowLeft", 37, ""),
        ("ArrowUp", "ArrowUp", 38, ""),
        ("ArrowRight", "ArrowRight", 39, ""),
        ("ArrowDown", "ArrowDown", 40, ""),
        ("Home", "Home", 36, ""),
        ("End", "End", 35, ""),
        ("PageUp", "PageUp", 33, ""),
        ("PageDown", "PageDown", 34, ""),
        ("Insert", "Insert", 45, ""),
        ("CapsLock", "CapsLock", 20, ""),
        ("ContextMenu", "ContextMenu", 93, ""),
        (" ", "Space", 32, " "),
    ]:
        add(name, code, key_code, text)
    for n in range(1, 13):
        add(f"F{n}", f"F{n}", 111 + n)
    add("Shift", "ShiftLeft", 16, location=1)
    add("Control", "ControlLeft", 17, location=1)
    add("Alt", "AltLeft", 18, location=1)
    add("Meta", "MetaLeft", 91, location=1)
    for letter in string.ascii_lowercase:
        add(letter, f"Key{letter.upper()}", ord(letter.upper()), letter)
        add(letter.upper(), f"Key{letter.upper()}", ord(letter.upper()), letter.upper())
    for digit in string.digits:
        add(digit, f"Digit{digit}", ord(digit), digit)
    shifted_digits = ")!@#$%^&*("
    for digit, char in zip(string.digits, shifted_digits, strict=True):
        add(char, f"Digit{digit}", ord(digit), char)
    for plain, shifted, code, key_code in [
        ("-", "_", "Minus", 189),
        ("=", "+", "Equal", 187),
        ("[", "{", "BracketLeft", 219),
        ("]", "}", "BracketRight", 221),
        ("\\", "|", "Backslash", 220),
        (";", ":", "Semicolon", 186),
        ("'", '"', "Quote", 222),
        (",", "<", "Comma", 188),
        (".", ">", "Period", 190),
        ("/", "?", "Slash", 191),
        ("`", "~", "Backquote", 192),
    ]:
        add(plain, code, key_code, plain)
        add(shifted, code, key_code, shifted)
    return keys


KEYS = _table()
"""Every key by its ``key`` name."""

_BY_CODE: dict[str, KeyDef] = {}
for _def in KEYS.values():
    _BY_CODE.setdefault(_def.code, _def)  # the unshifted key of each code comes first in the table
_BY_LOWER = {name.lower(): d for name, d in KEYS.items() if len(name) > 1}
_BY_LOWER.update({"space": KEYS[" "], "esc": KEYS["Escape"], "return": KEYS["Enter"], "del": KEYS["Delete"]})


@attrs.frozen(kw_only=True)
class Combo:
    """A parsed combo: the modifiers held (in the order given) and the key pressed with them."""

    modifiers: tuple[str, ...]
    key: KeyDef

    @property
    def mask(self) -> int:
        mask = 0
        for modifier in self.modifiers:
            mask |= MODIFIER_BITS[modifier]
        return mask


def key_def(name: str) -> KeyDef:
    """The key called ``name`` (a ``key`` value, a ``code`` value, or a common alias such as ``Esc``).

    Raises:
        ValueError: no such key; the message lists how keys are named.
    """
    found = KEYS.get(name) or _BY_CODE.get(name) or _BY_LOWER.get(name.lower())
    if found is None:
        raise ValueError(
            f"unknown key {name!r}: name a key as KeyboardEvent.key does (Enter, ArrowLeft, a, F5, ' ') or "
            "by "
            "its code (KeyA, Digit1), and join modifiers with '+' (Control+Shift+ArrowLeft)"
        )
    return found


def platform_modifier(name: str, platform: str = sys.platform) -> str:
    """``Meta`` is the command key on macOS; elsewhere the same shortcuts use ``Control``."""
    return name if name != "Meta" or platform == "darwin" else "Control"


def parse_combo(combo: str, platform: str = sys.platform) -> Combo:
    """Split ``"Control+Shift+ArrowLeft"`` into its modifiers and key (``"+"`` alone is the plus key).

    Raises:
        ValueError: empty, an unknown key, or a modifier that is not one of Alt, Control, Meta, Shift.
    """
    if not isinstance(combo, str) or not combo:
        raise ValueError(f"a key combo is a non-empty string such as 'Enter' or 'Control+a', not {combo!r}")
    parts = combo.split("+")
    # "Control++" and "+" name the plus key: the empty pieces that splitting leaves are that key.
    if parts[-1] == "":
        if parts[-2] != "":  # "Control+": a modifier and no key (not the plus key)
            raise ValueError(f"{combo!r} ends in '+' with no key after it (the plus key: 'Control++')")
        parts = [*[p for p in parts[:-2] if p], "+"]
    *held, last = parts
    modifiers: list[str] = []
    for part in held:
        modifier = _MODIFIER_ALIASES.get(part.lower())
        if modifier is None:
            raise ValueError(
                f"{part!r} in {combo!r} is not a modifier: only the last part is the key; the ones before it "
                "are Alt, Control, Meta or Shift"
            )
        modifier = platform_modifier(modifier, platform)
        if modifier not in modifiers:
            modifiers.append(modifier)
    alias = _MODIFIER_ALIASES.get(last.lower())
    key = key_def(platform_modifier(alias, platform) if alias else last)
    return Combo(modifiers=tuple(modifiers), key=key)


def key_event(kind: str, key: KeyDef, mask: int, *, with_text: bool = True) -> dict[str, object]:
    """The params of one ``Input.dispatchKeyEvent`` (``kind``: "down" or "up").

    A key that types text goes down as ``keyDown`` with that text; others (and any key with Control, Alt
    or Meta held, which makes a shortcut, not text) as ``rawKeyDown``, which is what lets Chromium run its
    editing commands (Control+a selects all on Linux).
    """
    text = key.text if with_text and not mask & ~MODIFIER_BITS["Shift"] else ""
    if mask & MODIFIER_BITS["Shift"] and len(text) == 1:
        text = text.upper()
    params: dict[str, object] = {
        "type": ("keyDown" if text else "rawKeyDown") if kind == "down" else "keyUp",
        "modifiers": mask,
        "key": key.key.upper() if mask & MODIFIER_BITS["Shift"] and len(key.key) == 1 else key.key,
        "code": key.code,
        "windowsVirtualKeyCode": key.key_code,
        "nativeVirtualKeyCode": key.key_code,
        "location": key.location,
    }
    if text and kind == "down":
        params["text"] = text
        params["unmodifiedText"] = text
    return params
