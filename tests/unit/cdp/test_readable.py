"""Binary fields as bytes, short reprs and UNSET documented, on the real bindings."""

from __future__ import annotations

import base64
import typing

import pytest

import cdp


def test_screenshot_pdf_and_fetch_bodies_are_bytes() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    wire = {"data": base64.b64encode(png).decode()}
    assert cdp.page.capture_screenshot().decode(wire).data == png
    assert cdp.page.print_to_pdf().decode({"data": wire["data"]}).data == png
    fulfil = cdp.fetch.fulfill_request(request_id="r1", response_code=200, body=b"<p>hi</p>")
    assert fulfil.params["body"] == base64.b64encode(b"<p>hi</p>").decode()
    assert typing.get_type_hints(cdp.page.ScreencastFrame)["data"] is bytes
    assert typing.get_type_hints(cdp.network.PostDataEntry)["bytes_"] == bytes | None  # no note in the JSON


def test_a_str_for_a_binary_field_is_refused_with_what_to_pass() -> None:
    with pytest.raises(TypeError, match=r"pass bytes .* base64.b64decode"):
        cdp.fetch.fulfill_request(request_id="r1", response_code=200, body="PHA+aGk8L3A+")  # type: ignore[arg-type]


def test_response_bodies_stay_str_because_the_protocol_says_base64_or_not() -> None:
    hints = typing.get_type_hints(cdp.network.GetResponseBodyResult)
    assert hints["body"] is str
    assert hints["base64_encoded"] is bool


def test_repr_of_a_large_result_is_short() -> None:
    shot = cdp.page.CaptureScreenshotResult(data=b"\x00" * 2_000_000)
    assert repr(shot) == "CaptureScreenshotResult(data=<2,000,000 bytes>)"
    assert str(shot) == repr(shot)
    nodes = [
        cdp.dom.Node(
            node_id=i, backend_node_id=i, node_type=1, node_name="DIV", local_name="div", node_value=""
        )
        for i in range(10_000)
    ]
    text = repr(cdp.dom.GetFlattenedDocumentResult(nodes=nodes))
    assert len(text) < 1500, len(text)
    assert "...<9,992 more>" in text
    assert repr(cdp.runtime.RemoteObject(type_="string", value="x" * 10_000)).endswith("...<10,000 chars>)")
    number = cdp.runtime.RemoteObject(type_="number", value=2, description="2")
    assert repr(number) == "RemoteObject(type_='number', value=2, description='2')"  # absent fields left out
    body = cdp.fetch.fulfill_request(request_id="r", response_code=200, body=b"x" * 100_000)
    assert len(repr(body)) < 200


def test_unset_is_explained_where_a_user_meets_it() -> None:
    doc = cdp.runtime.RemoteObject.__doc__ or ""
    assert "value: " in doc
    assert "cdp.UNSET" in doc
    absent = cdp.runtime.RemoteObject(type_="undefined")
    assert absent.value is cdp.UNSET
    assert not absent.value
    assert cdp.runtime.RemoteObject(type_="object", subtype="null", value=None).value is None
