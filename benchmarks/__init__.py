"""The side-by-side CDP latency suite: this engine vs minimal floor clients vs cdp-use vs Playwright.

Run it with ``python -m benchmarks`` (``--help`` for the options); see ``benchmarks/README.md``.
"""
