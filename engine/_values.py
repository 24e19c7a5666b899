"""Readable results: a RemoteObject as a Python value or a short repr, exception details as one line,
and response bodies as bytes.

The protocol answers ``Runtime.evaluate`` with a ``RemoteObject`` whose ``value`` reads ``cdp.UNSET`` when
the value was not sent (objects by reference, ``undefined``, ``NaN``, ``-0``, bigints), and reports a
script's error as ``ExceptionDetails`` whose message sits in three places. These helpers are pure: they
take the typed results, so they work on any session and in tests without a browser.
"""

from __future__ import annotations

import base64
import math
from typing import Any, Literal, overload

import cdp
from engine._errors import JavaScriptError, ProtocolError
from engine._session import Session

_UNSERIALIZABLE: dict[str, Any] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}
_SHORT = 60
"""Characters of a string shown by :func:`describe` before it is cut."""


def js_value(obj: cdp.runtime.RemoteObject) -> Any:
    """The Python value of a RemoteObject: JSON values as they are, ``undefined`` and ``null`` as None,
    ``NaN``/``Infinity``/``-0`` as floats, bigints as ints.

    Raises:
        ValueError: the object was returned by reference (it has an ``object_id``, no value); evaluate it
            with ``return_by_value=True``, or use :func:`describe` for a readable repr.
    """
    if obj.value is not cdp.UNSET:
        return obj.value
    special = obj.unserializable_value
    if special is not None:
        if special in _UNSERIALIZABLE:
            return _UNSERIALIZABLE[special]
        if special.endswith("n"):
            return int(special[:-1])
        raise ValueError(f"unknown unserializable value {special!r}")
    if obj.type_ == "undefined" or obj.subtype == "null":
        return None
    raise ValueError(
        f"this {describe(obj)} was returned by reference (object_id={obj.object_id!r}), not by value: "
        "evaluate with return_by_value=True, or use engine.describe() for a readable repr"
    )


def describe(obj: cdp.runtime.RemoteObject) -> str:
    """A short repr as the DevTools console shows it: ``2``, ``'text'``, ``undefined``, ``Array(3)``,
    ``{a: 1, b: 'x'}`` (from the preview, when the object was evaluated with ``generate_preview=True``)."""
    if obj.type_ == "undefined":
        return "undefined"
    if obj.subtype == "null":
        return "null"
    if obj.type_ == "string" and isinstance(obj.value, str):
        return _short_str(obj.value)
    if obj.unserializable_value is not None:
        return obj.unserializable_value
    if obj.value is not cdp.UNSET and obj.type_ in ("number", "boolean"):
        return "true" if obj.value is True else "false" if obj.value is False else repr(obj.value)
    if obj.preview is not None:
        return _preview(obj.preview)
    if obj.description:
        return obj.description.split("\n", 1)[0]
    if obj.value is not cdp.UNSET:
        return repr(obj.value)
    return str(obj.class_name or obj.type_)


def _short_str(text: str) -> str:
    return repr(text) if len(text) <= _SHORT else repr(text[:_SHORT]) + f"...<{len(text):,} chars>"


def _preview(preview: cdp.runtime.ObjectPreview) -> str:
    more = ", …" if preview.overflow else ""
    if preview.subtype == "array":
        items = ", ".join(_property(p, named=False) for p in preview.properties)
        return f"[{items}{more}]"
    if preview.type_ == "object" and preview.subtype is None:
        items = ", ".join(_property(p, named=True) for p in preview.properties)
        prefix = "" if preview.description in (None, "Object") else f"{preview.description} "
        return f"{prefix}{{{items}{more}}}"
    return preview.description or str(preview.type_)


def _property(prop: cdp.runtime.PropertyPreview, *, named: bool) -> str:
    value = prop.value or ""
    if prop.type_ == "string":
        value = repr(value)
    elif prop.value_preview is not None:
        value = _preview(prop.value_preview)
    return f"{prop.name}: {value}" if named else value


def exception_message(details: cdp.runtime.ExceptionDetails) -> str:
    """One line: the error and where it was thrown, e.g.
    ``TypeError: x.y is not a function (at http://127.0.0.1:8000/app.js:12:5)``.

    Lines and columns are 1-based here, as editors show them (the protocol's are 0-based).
    """
    thrown = details.exception
    if thrown is None:
        message = details.text
    elif thrown.description:
        message = thrown.description.split("\n", 1)[0]  # "TypeError: x is not a function"
    else:
        message = f"{details.text} {describe(thrown)}".strip()  # throw 'text': "Uncaught 'text'"
    url, line, column = details.url, details.line_number, details.column_number
    frames = details.stack_trace.call_frames if details.stack_trace is not None else []
    if frames:
        url, line, column = frames[0].url or url, frames[0].line_number, frames[0].column_number
    where = url or "<anonymous>"  # evaluated code has no URL; V8's own stack traces say <anonymous> too
    return f"{message} (at {where}:{line + 1}:{column + 1})"


@overload
def check_result(result: cdp.runtime.EvaluateResult) -> Any: ...
@overload
def check_result(result: cdp.runtime.CallFunctionOnResult) -> Any: ...
def check_result(result: cdp.runtime.EvaluateResult | cdp.runtime.CallFunctionOnResult) -> Any:
    """The Python value of an evaluate result, or :class:`JavaScriptError` if the script threw.

    Use with ``return_by_value=True`` (else objects come back by reference and :func:`js_value` raises).
    """
    if result.exception_details is not None:
        raise JavaScriptError(exception_message(result.exception_details), details=result.exception_details)
    return js_value(result.result)


# Overloads, not a union: mypy infers ``execute``'s result from the expected type, and a union there would
# not match the invariant ``Command[EvaluateResult]`` in ``check_result(await s.execute(...))``.
@overload
def body_bytes(result: cdp.network.GetResponseBodyResult) -> bytes: ...
@overload
def body_bytes(result: cdp.fetch.GetResponseBodyResult) -> bytes: ...
def body_bytes(result: cdp.network.GetResponseBodyResult | cdp.fetch.GetResponseBodyResult) -> bytes:
    """A response body as bytes, whatever ``base64_encoded`` says (text bodies come as UTF-8)."""
    if result.base64_encoded:
        return base64.b64decode(result.body)
    return result.body.encode()


async def response_body(
    session: Session, request_id: str, *, domain: Literal["Network", "Fetch"] = "Network"
) -> bytes:
    """The body of a response as bytes: ``Network.getResponseBody`` (a finished request's id), or
    ``Fetch.getResponseBody`` with ``domain="Fetch"`` (the id of a request paused at its response)."""
    if domain == "Fetch":
        paused = await session.execute(cdp.fetch.get_response_body(request_id=request_id))
        return body_bytes(paused)
    if domain != "Network":
        raise ValueError(f'domain must be "Network" or "Fetch", not {domain!r}')
    try:
        finished = await session.execute(cdp.network.get_response_body(request_id=request_id))
    except ProtocolError as exc:
        if "evicted" not in exc.message and "No resource with given identifier" not in exc.message:
            raise
        # A page's own set-up keeps no bodies (engine._requests.NETWORK_SETUP): the user's enable does.
        raise ProtocolError(
            code=exc.code,
            message=f"{exc.message} (Chromium keeps response bodies once Network is enabled with its "
            "buffers: send cdp.network.enable() on this session before the request is made)",
            data=exc.data,
            method=exc.method,
            session_id=exc.session_id,
        ) from exc
    return body_bytes(finished)
