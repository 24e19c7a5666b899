"""page.snapshot() and page.resolve() on a real headless Chromium, pages served on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

import cdp
from engine import Browser, Page, SessionDetached, Snapshot, StaleRefError, TargetCrashed, launch
from engine._axrender import NAME_LIMIT

pytestmark = pytest.mark.browser


@pytest.fixture
async def isolated() -> AsyncIterator[Browser]:
    """Every site in its own process, so cross-site iframes are out-of-process targets."""
    async with launch(args=["--site-per-process"]) as b:
        yield b


async def open_page(browser: Browser, url: str) -> Page:
    with trio.fail_after(20):
        return await browser.new_page(url)


async def evaluate(page: Page, expression: str) -> object:
    with trio.fail_after(10):
        got = await page.session.execute_raw(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}
        )
    return got["result"].get("value")


FRAMES_TOP = (
    '- heading "Host" [level=1] [ref=e1]\n'
    '- button "Top button" [ref=e2]\n'
    '- iframe "Same origin" [ref=e3]:\n'
    '  - button "Same-origin button" [ref=f1e4]\n'
)
"""frames.html's first snapshot down to its out-of-process iframe."""


async def until_both_frames_attached(page: Page) -> None:
    """frames.html: its out-of-process iframe and that one's own have attached, and settled a little."""
    with trio.fail_after(10):
        while not any(c.children for c in page.session.children.values()):
            await trio.sleep(0.05)
    await evaluate(page, "new Promise(r => setTimeout(r, 200))")


async def test_form_page_lists_roles_names_states_and_refs(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/refs/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
    lines = snap.text.splitlines()
    for expected in (
        '- heading "Checkout" [level=1] [ref=e1]',
        '  - link "Cart (3)" [url=/refs/form.html#cart] [ref=e3]',
        '  - textbox "Full name" [required] [value="Ada"] [ref=e5]',
        '  - checkbox "Gift wrap" [checked] [ref=e6]',
        '  - checkbox "Newsletter" [ref=e7]',
        '    - radio "Fast" [checked] [ref=e9]',
        '    - option "Blue" [selected] [ref=e12]',
        '  - button "Bold" [pressed] [ref=e13]',
        '  - button "More options" [expanded=false] [ref=e14]',
        '  - button "Pay now" [disabled] [ref=e15]',
        "- paragraph: Some plain words that are not a control.",
        '- img "Company logo" [ref=e18]',
    ):
        assert expected in lines, f"{expected!r} not in:\n{snap.text}"
    saves = [ref for ref in snap.refs.values() if (ref.role, ref.name) == ("button", "Save")]
    assert [ref.nth for ref in saves] == [0, 1]
    assert saves[0].backend_node_id != saves[1].backend_node_id
    assert "Invisible" not in snap.text  # display:none, aria-hidden and visibility:hidden
    long = next(ref for ref in snap.refs.values() if ref.name.startswith("Long"))
    assert len(long.name) > NAME_LIMIT
    assert f'"{long.name[: NAME_LIMIT - 1]}…"' in snap.text
    assert snap.stats.refs == len(snap.refs) == 19
    assert snap.stats.bytes == len(snap.text.encode())
    assert snap.stats.frames == 1
    assert snap.stats.nodes_seen > snap.stats.nodes_rendered > 0
    with trio.fail_after(10):
        again = await page.snapshot()
    assert again.text == snap.text  # deterministic, and the same refs


async def test_open_shadow_dom_and_a_modal_dialog(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/refs/shadow.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
    assert '- button "Inside shadow" [ref=e2]' in snap.text
    assert '- textbox "Shadow field" [ref=e3]' in snap.text
    await evaluate(page, "document.getElementById('open').click()")
    with trio.fail_after(10):
        modal = await page.snapshot()
    assert modal.text.splitlines()[0] == "- dialog [ref=e5]:"
    assert '  - button "OK" [ref=e7]' in modal.text
    assert "Inside shadow" not in modal.text  # the page behind a modal dialog is inert
    with trio.fail_after(10):
        ok = await page.resolve("e7")
    assert (ok.role, ok.name) == ("button", "OK")


async def test_iframes_same_origin_and_cross_origin_two_levels_deep(
    isolated: Browser, server: str, peer_port: str
) -> None:
    page = await open_page(isolated, f"{server}/refs/frames.html?peer={peer_port}")
    await until_both_frames_attached(page)
    with trio.fail_after(10):
        snap = await page.snapshot()
    assert snap.text == (
        FRAMES_TOP + '- iframe "Remote" [ref=e5]:\n'
        '  - button "Child button" [ref=f2e6]\n'
        '  - iframe "Grandchild" [ref=f2e7]:\n'
        '    - button "Deep button" [ref=f3e8]\n'
        '    - textbox "Deep field" [ref=f3e9]\n'
    )
    assert snap.stats.frames == 4
    with trio.fail_after(10):
        same = await page.resolve("f1e4")
        deep = await page.resolve("f3e8")
    assert same.session is page.session  # a same-process frame: the page's session
    assert deep.session.target_type == "iframe"
    assert deep.session.parent is not page.session
    assert deep.frame_id == deep.session.frame_id
    with trio.fail_after(10):  # the node really is the grandchild's button: click it there
        obj = await deep.session.execute_raw("DOM.resolveNode", {"backendNodeId": deep.backend_node_id})
        await deep.session.execute_raw(
            "Runtime.callFunctionOn",
            {"objectId": obj["object"]["objectId"], "functionDeclaration": "function() { this.click() }"},
        )
        renamed = await page.snapshot()
    assert '- button "Deep clicked" [ref=f3e10]' in renamed.text
    with trio.fail_after(10):
        flat = await page.snapshot(frames=False)
    assert "Child button" not in flat.text
    assert '- iframe "Remote" [ref=e5]' in flat.text


async def test_a_crashed_out_of_process_iframe_is_marked_and_the_rest_is_read(
    isolated: Browser, server: str, peer_port: str
) -> None:
    # The snapshot raised TargetCrashed for the whole page when one cross-site iframe's renderer crashed.
    page = await open_page(isolated, f"{server}/refs/frames.html?peer={peer_port}")
    await until_both_frames_attached(page)
    with trio.fail_after(20):
        await page.snapshot()
        remote = next(iter(page.session.children.values()))  # localhost: a renderer of its own
        with pytest.raises(TargetCrashed):
            await remote.execute(cdp.page.crash())
        snap = await page.snapshot()
        assert snap.text == (FRAMES_TOP + '- iframe "Remote" [crashed] [ref=e5]\n')
        with pytest.raises(TargetCrashed, match="reload the page"):
            await page.click("f2e6")
        await page.click("f1e4")  # the rest of the page works on
        await page.reload()
        await until_both_frames_attached(page)
        revived = await page.snapshot()
    assert "crashed" not in revived.text
    assert '- button "Deep button"' in revived.text


async def test_refs_survive_unrelated_changes_and_a_new_page_object(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/refs/form.html")
    with trio.fail_after(10):
        before = await page.snapshot()
    await evaluate(
        page, "document.body.prepend(Object.assign(document.createElement('button'), {textContent: 'Save'}))"
    )
    with trio.fail_after(10):
        after = await page.snapshot()
    assert after.refs["e16"].backend_node_id == before.refs["e16"].backend_node_id
    assert after.refs["e16"].nth == 1  # the new "Save" comes first in document order
    new = [ref for ref in after.refs if ref not in before.refs]
    assert len(new) == 1
    assert after.refs[new[0]].name == "Save"
    assert new[0] not in before.refs
    same_target = Page(browser, page.session, page.target_id)
    with trio.fail_after(10):
        node = await same_target.resolve("e16")
    assert node.backend_node_id == before.refs["e16"].backend_node_id


async def test_stale_refs_fail_closed_and_say_what_changed(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/refs/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
    assert snap.refs["e7"].name == "Newsletter"
    cases = {
        "e7": ("document.getElementById('news').remove()", "removed"),
        "e17": (
            "(b => b.replaceWith(Object.assign(document.createElement('button'), {textContent: 'Save'})))"
            "(document.querySelectorAll('button')[4])",
            "removed",
        ),
        "e16": ("document.querySelectorAll('button')[3].textContent = 'Saved!'", "renamed"),
        "e13": ("document.querySelectorAll('button')[0].setAttribute('role', 'link')", "role changed"),
    }
    for ref, (script, _) in cases.items():
        await evaluate(page, script)
    for ref, (_, reason) in cases.items():
        with trio.fail_after(10), pytest.raises(StaleRefError) as caught:
            await page.resolve(ref)
        assert caught.value.ref == ref
        assert caught.value.reason == reason
        assert ref in str(caught.value)
        assert "page.snapshot()" in str(caught.value)
    with trio.fail_after(10):
        fresh = await page.snapshot()
    twins = [r for r in fresh.refs.values() if (r.role, r.name) == ("button", "Save")]
    assert len(twins) == 1
    assert twins[0].ref not in snap.refs
    with trio.fail_after(10), pytest.raises(StaleRefError) as again:
        await page.resolve("e17")  # once stale, always stale
    assert again.value.reason == "removed"
    with trio.fail_after(10):
        await page.goto(f"{server}/refs/form.html")
    with trio.fail_after(10), pytest.raises(StaleRefError) as navigated:
        await page.resolve("e1")
    assert navigated.value.reason == "navigated"
    with trio.fail_after(10), pytest.raises(StaleRefError) as unknown:
        await page.resolve("e999")
    assert unknown.value.reason == "unknown"
    assert "page.snapshot()" in str(unknown.value)


async def test_snapshot_options_and_delta(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/refs/table.html")
    with trio.fail_after(10):
        full = await page.snapshot()
        controls = await page.snapshot(interactive_only=True)
        top = await page.snapshot(max_depth=0)
        table = await page.snapshot(root=next(r for r, v in full.refs.items() if v.name == "Order"))
        short = await page.snapshot(max_chars=120)
    assert "cell" not in controls.text
    assert '- slider "Volume" [value="40"]' in controls.text
    assert top.text == "- main: …\n"  # its children were left out, and it says so
    assert table.text.startswith('- columnheader "Order"')
    assert table.text.count("\n") == 1
    assert short.stats.truncated
    assert "(max_chars)" in short.text
    assert len(short.text) < 200
    assert not full.stats.truncated
    for bad in ({"max_depth": -1}, {"max_chars": 0}):  # would show nothing: refused, not an empty text
        with pytest.raises(ValueError, match=next(iter(bad))):
            await page.snapshot(**bad)  # type: ignore[arg-type]
    await evaluate(page, "document.querySelector('textarea').value = 'Changed'")
    with trio.fail_after(10):
        delta = await page.snapshot(delta=True)
    assert delta.is_delta
    assert delta.text.splitlines()[1:] == ['~ textbox "Notes" [value="Changed"] [ref=e12]']
    # A renamed element gets a new ref; its old ref shows as removed, so a reader drops it too.
    await evaluate(page, "document.querySelector('input[type=range]').setAttribute('aria-label', 'Loudness')")
    with trio.fail_after(10):
        renamed = await page.snapshot(delta=True)
    volume = next(r for r, v in full.refs.items() if v.name == "Volume")
    loud = next(r for r, v in renamed.refs.items() if v.name == "Loudness")
    assert renamed.text.splitlines()[1:] == [
        f'+ slider "Loudness" [value="40"] [ref={loud}]',
        f'- slider "Volume" [value="40"] [ref={volume}]',
    ]
    await evaluate(page, "document.querySelector('main').innerHTML = '<button>Only</button>'")
    with trio.fail_after(10):
        rewritten = await page.snapshot(delta=True)
    assert not rewritten.is_delta
    assert rewritten.text == '- main:\n  - button "Only" [ref=e15]\n'


async def test_webarena_ids_resolve_through_the_same_identity_check(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/refs/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot(format="webarena")
    first = snap.text.splitlines()[0]
    assert first.startswith("[")
    assert first.endswith("] heading 'Checkout' level: 1")
    pay = next(key for key, ref in snap.refs.items() if ref.name == "Pay now")
    assert f"\t[{pay}] button 'Pay now' disabled: true" in snap.text
    with trio.fail_after(10):
        node = await page.resolve(pay)
    assert node.backend_node_id == snap.refs[pay].backend_node_id
    await evaluate(page, "document.querySelectorAll('button')[2].textContent = 'Paid'")
    with trio.fail_after(10), pytest.raises(StaleRefError):
        await page.resolve(pay)
    with trio.fail_after(10):
        by_node = await page.resolve(f"node:{node.backend_node_id}")
    assert (by_node.role, by_node.name) == ("button", "Paid")


async def test_the_5000_element_page(browser: Browser) -> None:
    from benchmarks.pages import PageServer

    with PageServer() as pages:
        page = await open_page(browser, pages.url("/big.html"))
        with trio.fail_after(30):
            snap = await page.snapshot()
            last = await page.resolve(list(snap.refs)[-1])
    assert snap.stats.refs == 3000  # a link, a button and a textbox per row
    assert snap.stats.nodes_seen > 12_000
    assert (last.role, last.name) == ("textbox", "Quantity 999")
    assert snap.stats.bytes < 200_000


async def test_a_closed_page_raises_one_error_not_a_group(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/refs/form.html")
    with trio.fail_after(10):
        await page.snapshot()
        await page.close()
    with trio.fail_after(10), pytest.raises(SessionDetached):
        await page.snapshot()
    with trio.fail_after(10), pytest.raises(SessionDetached):
        await page.resolve("e1")


_HIDDEN = (
    "data:text/html,<button id=a>Cancel</button><button id=b aria-label='Close'>x</button>"
    "<button id=c><img alt='Save' src='data:,'></button><label>Email <input id=d></label>"
    "<button id=e>Keep</button><a href='/x'><img alt=Logo src='data:,'> Home</a>"
    "<button><div>Save</div><div>draft</div></button><input type=submit>"
    "<span id=f aria-label='Close dialog'>x</span><button aria-labelledby=f>x</button>"
    "<style>.menu::before{content:'Menu'}</style><button class=menu></button><div id=g></div><script>"
    "document.getElementById('g').attachShadow({mode:'open'}).innerHTML="
    "'<span id=t>Next page</span><button aria-labelledby=t>&gt;</button>'</script>"
)


async def test_a_hidden_element_keeps_its_ref_until_it_no_longer_says_its_name(browser: Browser) -> None:
    # A hidden node has no name in the AX tree. Its identity check skipped the name, so a button renamed
    # "Delete everything" and hidden still passed as "Cancel", and a forced click hit it.
    page = await open_page(browser, _HIDDEN)
    with trio.fail_after(10):
        snap = await page.snapshot()
    refs = {(r.role, r.name): r.ref for r in snap.refs.values()}
    named = [
        ("button", "Cancel"),
        ("button", "Close"),
        ("button", "Save"),
        ("textbox", "Email"),
        ("button", "Keep"),
        ("link", "Logo Home"),  # names of several parts
        ("button", "Save draft"),
        ("button", "Submit"),
        ("button", "Close dialog"),  # labelled by an element named by its aria-label
        ("button", "Menu"),  # CSS content
        ("button", "Next page"),  # labelled by an element of its shadow root
    ]
    with trio.fail_after(10):
        await evaluate(
            page, "for (const el of document.querySelectorAll('a, button, input')) el.style.display = 'none'"
        )
        await evaluate(page, "document.getElementById('g').shadowRoot.querySelector('button').hidden = true")
        await evaluate(page, "document.getElementById('e').setAttribute('aria-hidden', 'true')")
        for key in named:
            await page.resolve(refs[key])  # hidden, same element, same name: still good
        await evaluate(page, "document.getElementById('a').textContent = 'Delete everything'")
        await evaluate(page, "document.getElementById('e').textContent = 'Discard'")
        for key in [("button", "Cancel"), ("button", "Keep")]:
            with pytest.raises(StaleRefError) as caught:
                await page.resolve(refs[key])
            assert caught.value.reason == "renamed"
            assert "hidden now" in str(caught.value)
        await page.resolve(refs[("button", "Close")])
        # A name that grew still held every word of the old one, and a role the markup changed went unseen.
        await evaluate(page, "document.getElementById('b').setAttribute('aria-label', 'Close all')")
        await evaluate(page, "document.getElementById('c').setAttribute('role', 'checkbox')")
        for key, reason in [
            (("button", "Close"), "renamed"),
            (("button", "Save"), "role changed"),
            (("button", "Save draft"), None),  # spaced in the name, not in textContent: still good
        ]:
            if reason is None:
                await page.resolve(refs[key])
                continue
            with pytest.raises(StaleRefError) as caught:
                await page.resolve(refs[key])
            assert caught.value.reason == reason, key


async def open_delta_page(browser: Browser, server: str) -> Page:
    page = await open_page(browser, f"{server}/refs/delta.html")
    with trio.fail_after(10):
        while "Same-origin button" not in (await page.snapshot(format="webarena")).text:  # the iframe loaded
            await trio.sleep(0.05)
    return page


async def test_a_delta_compares_only_snapshots_taken_with_the_same_options(
    browser: Browser, server: str
) -> None:
    page = await open_delta_page(browser, server)

    async def each_shape() -> dict[str, Snapshot]:
        return {
            "interactive_only": await page.snapshot(delta=True, interactive_only=True),
            "max_depth=0": await page.snapshot(delta=True, max_depth=0),
            "frames=False": await page.snapshot(delta=True, frames=False),
        }

    with trio.fail_after(20):
        full = await page.snapshot()
        # Nothing changed, but no earlier snapshot was taken with these options: the full text, not a delta
        # that reads the lines the filter left out as removed.
        first = await each_shape()
        again = await each_shape()
        whole = await page.snapshot(delta=True)
        steps = await page.run_steps([{"type": "read_page", "interactive_only": True, "delta": True}])
    for shape, snap in first.items():
        assert not snap.is_delta, f"{shape}:\n{snap.text}"
        assert "removed" not in snap.text
    for shape, snap in again.items():
        assert snap.is_delta
        assert snap.text == (
            f"# delta since snapshot {first[shape].generation} ({shape}): 0 added, 0 changed, 0 removed\n"
        )
    assert whole.text == f"# delta since snapshot {full.generation}: 0 added, 0 changed, 0 removed\n"
    assert steps.pages[0]["text"] == (
        f"# delta since snapshot {again['interactive_only'].generation} (interactive_only): "
        "0 added, 0 changed, 0 removed\n"
    )


async def test_a_snapshot_cut_by_max_chars_is_not_the_next_deltas_baseline(
    browser: Browser, server: str
) -> None:
    page = await open_delta_page(browser, server)
    with trio.fail_after(20):
        cut = await page.snapshot(max_chars=40)
        await evaluate(
            page, "document.querySelector('nav').insertAdjacentHTML('beforeend', '<button>New</button>')"
        )
        after_cut = await page.snapshot(delta=True)
    assert cut.stats.truncated
    # The reader saw one line: the next delta has nothing whole to compare with, so it is the full text.
    assert not after_cut.is_delta
    assert set(after_cut.refs) > set(cut.refs)
    assert "Row" in after_cut.text
    await evaluate(page, "document.getElementById('cancel').textContent = 'Stop'")
    with trio.fail_after(20):
        cut_delta = await page.snapshot(delta=True, max_chars=60)
        delta = await page.snapshot(delta=True)
    assert cut_delta.stats.truncated
    # The cut delta did not show the change whole: the next one still reports it, against the last whole one.
    assert delta.is_delta
    lines = delta.text.splitlines()
    assert lines[0] == f"# delta since snapshot {after_cut.generation}: 1 added, 0 changed, 1 removed"
    assert lines[1].startswith('+ button "Stop"')
    assert lines[2].startswith('- button "Cancel"')


async def test_a_name_or_text_that_reads_like_a_ref_leaves_snap_refs_alone(
    browser: Browser, server: str
) -> None:
    page = await open_delta_page(browser, server)
    with trio.fail_after(20):
        snap = await page.snapshot()
    pay = next(ref for ref in snap.refs.values() if ref.role == "button" and ref.name.startswith("Pay"))
    assert f'- button "Pay [ref=e1] now" [ref={pay.ref}]' in snap.text.splitlines()
    assert snap.stats.refs == len(snap.refs) == snap.text.count("[ref=") - 1
    cancel = next(ref.ref for ref in snap.refs.values() if ref.name == "Cancel")
    await evaluate(page, f"document.getElementById('para').textContent = 'Press [ref={cancel}]'")
    with trio.fail_after(20):
        delta = await page.snapshot(delta=True)
    assert delta.is_delta
    assert f"+ paragraph: Press [ref={cancel}]" in delta.text.splitlines()
    assert delta.refs == {}  # the page's text names a ref; the delta shows no element to act on


async def test_a_root_whose_element_was_removed_raises_stale_ref(browser: Browser, server: str) -> None:
    page = await open_delta_page(browser, server)
    with trio.fail_after(20):
        snap = await page.snapshot()
        results = next(ref.ref for ref in snap.refs.values() if ref.name == "Results")
        assert (await page.snapshot(root=results)).text.startswith('- region "Results"')
        await evaluate(page, "document.getElementById('sec').remove()")
        with pytest.raises(StaleRefError) as gone:
            await page.snapshot(root=results)
    assert gone.value.reason == "removed"


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("max_depth", 1.5, TypeError),
        ("max_depth", True, TypeError),
        ("max_depth", "2", TypeError),
        ("max_chars", "10", TypeError),
        ("max_chars", 0.5, TypeError),
        ("interactive_only", "no", TypeError),
        ("root", 12, TypeError),
        ("format", "WEBARENA", ValueError),
    ],
)
async def test_a_snapshot_option_of_the_wrong_type_is_refused_by_name(
    browser: Browser, server: str, option: str, value: object, error: type[Exception]
) -> None:
    page = await open_page(browser, f"{server}/refs/table.html")
    with trio.fail_after(10), pytest.raises(error, match=f"^{option}="):
        await page.snapshot(**{option: value})  # type: ignore[arg-type]


async def test_a_line_whose_children_max_depth_left_out_says_so(browser: Browser, server: str) -> None:
    page = await open_delta_page(browser, server)
    with trio.fail_after(20):
        top = await page.snapshot(max_depth=0)
        whole = await page.snapshot()
    lines = top.text.splitlines()
    assert lines[0].startswith('- heading "Title"')  # its text only repeats its name: nothing left out
    assert not lines[0].endswith("…")
    assert "- paragraph: …" in lines
    nav = next(ref for ref in whole.refs.values() if ref.name == "Main")
    assert f'- navigation "Main" [ref={nav.ref}]: …' in lines
    cancel = next(line for line in lines if line.startswith('- button "Cancel"'))
    assert cancel.endswith("]")  # a leaf: nothing below it was left out
