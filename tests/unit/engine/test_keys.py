"""The key table and combo parsing: what page.press sends, without a browser."""

from __future__ import annotations

import pytest

from engine._keys import KEYS, MODIFIER_BITS, key_def, key_event, parse_combo


def test_named_keys_carry_key_code_and_text() -> None:
    enter = key_def("Enter")
    assert (enter.code, enter.key_code, enter.text) == ("Enter", 13, "\r")
    assert key_def("ArrowLeft").key_code == 37
    assert key_def("ArrowLeft").text == ""
    assert key_def("F5").key_code == 116
    assert key_def("a").code == "KeyA"
    assert key_def("A").code == "KeyA"
    assert key_def("KeyA").key == "a"  # by code
    assert key_def("Digit1").key == "1"
    assert key_def("!").code == "Digit1"
    assert key_def("esc").key == "Escape"
    assert key_def("space").key == " "


def test_combo_splits_modifiers_and_key() -> None:
    combo = parse_combo("Control+Shift+ArrowLeft", platform="linux")
    assert combo.modifiers == ("Control", "Shift")
    assert combo.key.key == "ArrowLeft"
    assert combo.mask == MODIFIER_BITS["Control"] | MODIFIER_BITS["Shift"]
    assert parse_combo("+").key.key == "+"
    assert parse_combo("Shift++").modifiers == ("Shift",)
    assert parse_combo("Shift++").key.key == "+"


def test_meta_is_control_off_macos_and_meta_on_macos() -> None:
    assert parse_combo("Meta+a", platform="linux").modifiers == ("Control",)
    assert parse_combo("Meta+a", platform="darwin").modifiers == ("Meta",)
    assert parse_combo("Cmd+Control+a", platform="linux").modifiers == ("Control",)  # not twice


@pytest.mark.parametrize(
    ("combo", "message"),
    [
        ("", "non-empty"),
        ("Hyper+a", "not a modifier"),
        ("Control+Nope", "unknown key"),
        ("a+b", "not a modifier"),
        ("Control+", "ends in '\\+' with no key"),  # not the plus key with Control dropped
    ],
)
def test_bad_combos_say_what_to_write(combo: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_combo(combo)


def test_key_events_type_text_only_without_shortcut_modifiers() -> None:
    a = KEYS["a"]
    down = key_event("down", a, 0)
    assert down["type"] == "keyDown"
    assert down["text"] == "a"
    assert down["windowsVirtualKeyCode"] == 65
    ctrl = key_event("down", a, MODIFIER_BITS["Control"])
    assert ctrl["type"] == "rawKeyDown"
    assert "text" not in ctrl  # a shortcut, not text
    shifted = key_event("down", a, MODIFIER_BITS["Shift"])
    assert shifted["text"] == "A"
    assert shifted["key"] == "A"
    assert key_event("down", KEYS["ArrowLeft"], 0)["type"] == "rawKeyDown"
    assert key_event("up", a, 0)["type"] == "keyUp"
    assert "text" not in key_event("up", a, 0)
    assert key_event("down", KEYS["Shift"], MODIFIER_BITS["Shift"])["location"] == 1
