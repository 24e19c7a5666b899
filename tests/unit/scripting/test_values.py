"""The pure helpers of engine._values on typed results built by hand (the browser cases are in
tests/browser/integration/test_scripting.py)."""

from __future__ import annotations

import base64

import pytest

import cdp
from engine import JavaScriptError, body_bytes, check_result, describe, exception_message, js_value

Remote = cdp.runtime.RemoteObject


def test_exception_message_prefers_the_top_stack_frame_and_counts_from_one() -> None:
    frame = cdp.runtime.CallFrame(
        function_name="total", script_id="7", url="http://127.0.0.1/app.js", line_number=11, column_number=4
    )
    details = cdp.runtime.ExceptionDetails(
        exception_id=1,
        text="Uncaught",
        line_number=0,
        column_number=0,
        exception=Remote(
            type_="object", subtype="error", description="TypeError: boom\n    at total (app.js:12:5)"
        ),
        stack_trace=cdp.runtime.StackTrace(call_frames=[frame]),
    )
    assert exception_message(details) == "TypeError: boom (at http://127.0.0.1/app.js:12:5)"
    bare = cdp.runtime.ExceptionDetails(
        exception_id=2, text="SyntaxError: nope", line_number=2, column_number=0
    )
    assert exception_message(bare) == "SyntaxError: nope (at <anonymous>:3:1)"
    result = cdp.runtime.EvaluateResult(result=Remote(type_="undefined"), exception_details=bare)
    with pytest.raises(JavaScriptError, match="SyntaxError: nope") as info:
        check_result(result)
    assert info.value.details is bare


def test_js_value_and_describe_of_values_the_wire_cannot_carry() -> None:
    assert js_value(Remote(type_="bigint", unserializable_value="-12n")) == -12
    assert js_value(Remote(type_="number", unserializable_value="-Infinity")) == float("-inf")
    assert describe(Remote(type_="number", unserializable_value="NaN")) == "NaN"
    assert describe(Remote(type_="boolean", value=True)) == "true"
    assert describe(Remote(type_="object", subtype="null", value=None)) == "null"
    with pytest.raises(ValueError, match="unknown unserializable value"):
        js_value(Remote(type_="number", unserializable_value="Surprise"))


def test_body_bytes_whatever_base64_encoded_says() -> None:
    png = bytes(range(256))
    encoded = cdp.network.GetResponseBodyResult(body=base64.b64encode(png).decode(), base64_encoded=True)
    assert body_bytes(encoded) == png
    text = cdp.fetch.GetResponseBodyResult(body="héllo", base64_encoded=False)
    assert body_bytes(text) == "héllo".encode()
