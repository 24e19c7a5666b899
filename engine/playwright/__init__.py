"""A thin Playwright adapter: this engine beside a user's Playwright page, and Playwright as a fallback.

Nothing here imports playwright until a runner starts (``import engine.playwright`` is cheap and works
without it installed). Playwright is asyncio: it runs on a thread and loop of its own
(:func:`open_runner`), and a hung Playwright call never blocks the trio thread.

    async with open_runner() as runner:
        pw_page = await runner.run(my_setup)                 # Playwright calls run on its loop
        async with attach(runner, pw_page, "http://127.0.0.1:9222") as tab:
            await tab.page.evaluate("while (true) {}")      # ours: bounded, terminated, the tab stays usable
            refs = await tab.map_refs()                      # Playwright's ai-snapshot refs -> backendNodeIds
            await tab.evaluate("(el) => el.id", ref="e3")   # CDP, or Playwright's own aria-ref
            await tab.run(lambda p: p.click("#go"))          # a Playwright call, recovered if it hangs
"""

from engine.playwright._refmap import PlaywrightRef as PlaywrightRef
from engine.playwright._refmap import map_refs as map_refs
from engine.playwright._refmap import parse_ai_snapshot as parse_ai_snapshot
from engine.playwright._runner import PlaywrightRunner as PlaywrightRunner
from engine.playwright._runner import open_runner as open_runner
from engine.playwright._tab import CDPUnavailable as CDPUnavailable
from engine.playwright._tab import PlaywrightTab as PlaywrightTab
from engine.playwright._tab import PlaywrightUnavailable as PlaywrightUnavailable
from engine.playwright._tab import attach as attach
from engine.playwright._tab import attach_page as attach_page

__all__ = [
    "CDPUnavailable",
    "PlaywrightRef",
    "PlaywrightRunner",
    "PlaywrightTab",
    "PlaywrightUnavailable",
    "attach",
    "attach_page",
    "map_refs",
    "open_runner",
    "parse_ai_snapshot",
]
