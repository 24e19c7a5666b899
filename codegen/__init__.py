"""Generator of the ``cdp`` package from the pinned protocol JSON (``python -m codegen``)."""
