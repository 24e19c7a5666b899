"""Fault injection: the engine's promises (README, "Guarantees"), checked as a set with `pytest tests/faults`.

- test_link_faults         fake peer: replies, garbage, link loss, detach, crash, overflow policies
- test_connection_faults   fake peer: unparseable params, id-less errors, odd ids, crash state, new_page
                           groups, forgotten pages, connect() to endpoints that misbehave
- test_transport_faults    pipe and websocket: ping floods, inbound size caps, connect-phase errors
- test_process_faults      Chromium's process: temp files, session sweep, launcher scripts, Ctrl-C, args
- test_browser_faults      real Chromium: goto that never loaded, crashes, Chromium's own parse limits,
                           teardown under cancellation
- test_kill_crash_detach   real Chromium: kill -9, crash, closed tab, 100 MB messages, floods, launch errors
"""
