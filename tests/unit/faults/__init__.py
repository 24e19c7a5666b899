"""Fault injection without a browser: the promises of the README's "Guarantees" that a fake peer, a fake
endpoint or a stand-in executable can show. The real-Chromium half is ``tests/browser/faults``; run both
with ``pytest tests/unit/faults tests/browser/faults``.

- test_link_faults         fake peer: replies, garbage, link loss, detach, crash, overflow policies
- test_connection_faults   fake peer: unparseable params, id-less errors, odd ids, crash state, new_page
                           groups, forgotten pages, connect() to endpoints that misbehave
- test_transport_faults    pipe and websocket: ping floods, inbound size caps, connect-phase errors
- test_process_faults      stand-in executables: session sweep, launcher scripts, argument checks
- test_commit_faults       fake tab: a screenshot or input lost to a commit, a capture refused between docs
"""
