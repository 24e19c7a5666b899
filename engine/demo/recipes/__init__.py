"""Everyday protocol scripts, each runnable as ``python -m engine.demo.recipes.<name> URL``.

screenshot (PNG and PDF), network (a request table), intercept (Fetch), console (messages and
exceptions), tabs (ten at once), storage (cookies and localStorage), frames (cross-origin iframes),
cli (the same from the shell). The test suite runs each against a real Chromium.
"""
