"""Fault injection against a real headless Chromium; the fake-peer half is ``tests/unit/faults``.

- test_browser_faults      goto that never loaded, crashes, Chromium's own parse limits, teardown under
                           cancellation, cancelled new_page
- test_kill_crash_detach   kill -9, crash, closed tab, 100 MB messages, floods, launch errors
- test_process_faults      temp files after cancelled start-ups, SIGKILL, launchers, repeated Ctrl-C
- test_transport_faults    discovering a real browser's websocket
"""
