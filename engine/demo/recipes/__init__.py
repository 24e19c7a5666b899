"""Everyday protocol scripts, each runnable as ``python -m engine.demo.recipes.<name> URL``.

screenshot (PNG and PDF), network (a request table), intercept (Fetch), console (messages and
exceptions), tabs (ten at once), storage (cookies and localStorage), frames (cross-origin iframes),
cli (the same from the shell). The test suite runs each against a real Chromium.
"""

import sys


def url_argument() -> str:
    """The page URL from the command line (and the recipe's usage, if it is missing)."""
    if len(sys.argv) < 2 or not sys.argv[1].startswith(("http://", "https://", "file:", "about:", "data:")):
        module = getattr(sys.modules["__main__"].__spec__, "name", "engine.demo.recipes.<name>")
        sys.exit(
            f"usage: python -m {module} URL   (the page to run the recipe on, e.g. http://127.0.0.1:8000/)"
        )
    return sys.argv[1]
