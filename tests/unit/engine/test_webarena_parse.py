"""engine.webarena.parse without a browser: every form, and errors that quote the bad part and the form."""

from __future__ import annotations

import re

import pytest

from engine.webarena import FORMS, Action, parse


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("click [1234]", Action(name="click", id="1234")),
        ("  hover [7] ", Action(name="hover", id="7")),
        ("type [12] [hello] [0]", Action(name="type", id="12", text="hello", press_enter_after=False)),
        (
            "type [12] [hello world] [1]",
            Action(name="type", id="12", text="hello world", press_enter_after=True),
        ),
        (
            "type [12] [hi]",
            Action(name="type", id="12", text="hi", press_enter_after=True),
        ),  # WebArena's default
        ("type [12] [a [b] c] [0]", Action(name="type", id="12", text="a [b] c", press_enter_after=False)),
        ("type [12] [] [0]", Action(name="type", id="12", text="", press_enter_after=False)),
        ("press [Control+a]", Action(name="press", key="Control+a")),
        ("scroll [down]", Action(name="scroll", direction="down")),
        ("scroll [direction=up]", Action(name="scroll", direction="up")),
        ("goto [http://127.0.0.1:8000/a?b=[1]]", Action(name="goto", url="http://127.0.0.1:8000/a?b=[1]")),
        ("new_tab", Action(name="new_tab")),
        ("go_back", Action(name="go_back")),
        ("go_forward", Action(name="go_forward")),
        ("tab_focus [2]", Action(name="tab_focus", index=2)),
        ("close_tab", Action(name="close_tab")),
        ("stop [The price is [$5]]", Action(name="stop", answer="The price is [$5]")),
        ("stop", Action(name="stop", answer="")),
        ("CLICK [3]", Action(name="click", id="3")),
    ],
)
def test_every_form_parses(text: str, action: Action) -> None:
    assert parse(text) == action


@pytest.mark.parametrize(
    ("text", "quoted", "form"),
    [
        ("click 12", "'12'", "click [id]"),
        ("click [abc]", "'[abc]'", "click [id]"),
        ("click [1] [2]", "'click [1] [2]'", "click [id]"),
        ("click [12", "'[12'", "click [id]"),
        ("type [3] [x] [2]", "'[2]'", "type [id] [text] [press_enter_after=0|1]"),
        ("type [3]", "'type [3]'", "type [id] [text] [press_enter_after=0|1]"),
        ("type [3] [unterminated", "'[unterminated'", "type [id] [text] [press_enter_after=0|1]"),
        ("scroll [left]", "'[left]'", "scroll [up|down]"),
        ("tab_focus [first]", "'[first]'", "tab_focus [index]"),
        ("go_back [1]", "'go_back [1]'", "go_back"),
        ("press []", "'[]'", "press [key_comb]"),
        ("goto []", "'[]'", "goto [url]"),
        ("goto [javascript:alert(1)]", "'[javascript:alert(1)]'", "goto [url]"),
    ],
)
def test_a_malformed_string_quotes_the_bad_part_and_the_expected_form(
    text: str, quoted: str, form: str
) -> None:
    with pytest.raises(ValueError, match="cannot read") as caught:
        parse(text)
    message = str(caught.value)
    assert quoted in message
    assert f"expected {form!r}" in message


@pytest.mark.parametrize("text", ["fly [3]", "", "   ", "[3]"])
def test_an_unknown_action_lists_every_form(text: str) -> None:
    with pytest.raises(ValueError, match="expected one of") as caught:
        parse(text)
    for form in FORMS.values():
        assert form in str(caught.value)


def test_only_strings_are_actions() -> None:
    with pytest.raises(TypeError, match="is a string"):
        parse(["click", 3])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url",
    [
        "java\tscript:document.title='x';void 0",
        "java\nscript:document.title='x'",
        "java\rscript:1",
        "\x00javascript:1",
        "\x01 JavaScript:1",
        "javascript\t:1",
    ],
)
def test_goto_refuses_what_a_url_parser_reads_as_javascript(url: str) -> None:
    # Chromium drops tabs and newlines anywhere and C0 controls at the ends before it reads the scheme.
    with pytest.raises(ValueError, match="javascript: would run a script"):
        parse(f"goto [{url}]")


@pytest.mark.parametrize("url", ["http://a/?q=javascript:1", "about:blank", "HTTPS://a/", "data:,x"])
def test_goto_takes_urls_that_only_mention_javascript(url: str) -> None:
    assert parse(f"goto [{url}]") == Action(name="goto", url=url)


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("chrome://hang", "chrome"),  # the browser's own pages: this one stops the tab for good
        ("CHROME://crash", "chrome"),
        ("view-source:http://a/", "view-source"),
        ("javascript-docs.example:8000/", "javascript-docs.example"),  # a host with no scheme before it
    ],
)
def test_goto_refuses_urls_that_are_not_pages(url: str, scheme: str) -> None:
    with pytest.raises(ValueError, match=f"{re.escape(scheme)}: is not a page's scheme"):
        parse(f"goto [{url}]")


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("click [١٢]", "'[١٢]'"),  # Arabic-Indic digits: str.isdigit() says yes
        ("hover [²]", "'[²]'"),
        ("type [٣] [x]", "'[٣]'"),
        ("tab_focus [²]", "'[²]'"),  # was a bare "invalid literal for int()"
        ("tab_focus [" + "9" * 5000 + "]", "'[999"),  # int() refuses over 4300 digits
    ],
)
def test_ids_and_indexes_are_ascii_digits(text: str, quoted: str) -> None:
    with pytest.raises(ValueError, match="cannot read") as caught:
        parse(text)
    assert quoted in str(caught.value)
    assert len(str(caught.value)) < 500


def test_press_refuses_a_key_page_press_would_refuse() -> None:
    with pytest.raises(ValueError, match="unknown key 'NotAKey'") as caught:
        parse("press [NotAKey]")
    assert "expected 'press [key_comb]'" in str(caught.value)


def test_type_text_runs_to_the_last_bracket_as_in_webarena() -> None:
    # WebArena's parser reads `type ?\[(\d+)\] ?\[(.+)\] ?\[(\d+)\]` (greedy): brackets belong to the text.
    assert parse("type [12] [a] [b]") == Action(name="type", id="12", text="a] [b", press_enter_after=True)
    assert parse("type [12] [a] [b] [0]") == Action(
        name="type", id="12", text="a] [b", press_enter_after=False
    )


def test_execute_refuses_a_hand_built_javascript_goto_before_touching_the_page() -> None:
    import trio

    from engine.webarena import execute

    async def main() -> None:
        with pytest.raises(ValueError, match="javascript: would run a script"):
            await execute(object(), Action(name="goto", url="java\tscript:1"))  # type: ignore[arg-type]

    trio.run(main)
