"""Hand-written modules of the ``cdp`` package.

Each ``_*.py`` here is real Python, linted and type-checked like the rest of the code; ``python -m codegen``
copies it into ``cdp/`` under the DO NOT EDIT header. Edit it here, never in ``cdp/``.
"""
