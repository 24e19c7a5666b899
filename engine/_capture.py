"""Screenshots (``Page.captureScreenshot``) and history moves."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from engine._actionability import frame_offset
from engine._errors import ActionError, ProtocolError

if TYPE_CHECKING:
    from engine._page import Page


async def screenshot(page: Page, *, ref: str | None, full_page: bool) -> bytes:
    """A PNG of the viewport, of the element ``ref`` (its border box), or of the whole page."""
    session = page.session
    params: dict[str, Any] = {"format": "png"}
    if ref is not None and full_page:
        raise ValueError("screenshot takes ref= or full_page=True, not both")
    if ref is not None:
        node = await page.resolve(ref)
        try:
            await node.session.execute_raw(
                "DOM.scrollIntoViewIfNeeded", {"backendNodeId": node.backend_node_id}
            )
            quads = (
                await node.session.execute_raw("DOM.getContentQuads", {"backendNodeId": node.backend_node_id})
            )["quads"]
        except ProtocolError as exc:
            raise ActionError(
                f"screenshot {ref}: the element has no box ({exc.message})", ref=ref, check="visible"
            ) from None
        if not quads:
            raise ActionError(f"screenshot {ref}: the element has no box", ref=ref, check="visible")
        xs, ys = quads[0][0::2], quads[0][1::2]
        ox, oy = (0.0, 0.0) if node.session is session else await frame_offset(page, node.session)
        metrics = await session.execute_raw("Page.getLayoutMetrics")
        viewport = metrics["cssVisualViewport"]
        params["clip"] = {
            "x": min(xs) + ox + viewport["pageX"],
            "y": min(ys) + oy + viewport["pageY"],
            "width": max(xs) - min(xs),
            "height": max(ys) - min(ys),
            "scale": 1,
        }
    elif full_page:
        metrics = await session.execute_raw("Page.getLayoutMetrics")
        size = metrics["cssContentSize"]
        params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        params["captureBeyondViewport"] = True
    got = await session.execute_raw("Page.captureScreenshot", params)
    return base64.b64decode(got["data"])


async def reload(page: Page) -> None:
    """Reload and wait for the new document's ``load``."""
    session = page.session
    async with session.listen(
        "Page.loadEventFired", typed=False, buffer_size=16, overflow="drop_oldest"
    ) as events:
        await session.execute_raw("Page.reload")
        await events.receive()
