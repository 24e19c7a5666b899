"""cdp-engine: a trio-native Chrome DevTools Protocol engine.

``launch()`` / ``connect()`` give a :class:`Browser`; every target session is multiplexed on one
connection; ``Session.execute`` takes the generated ``cdp`` commands and returns typed results.
Deadlines are the caller's cancel scopes (``trio.fail_after``); nothing here takes a ``timeout=``.

``engine.lowlevel`` has the parts under it (transports, connections, the session table) for benchmarks
and tool builders; ``engine.testing`` has a fake browser over in-memory channels for your own tests.
"""

from engine._background import connect_in_background as connect_in_background
from engine._background import launch_in_background as launch_in_background
from engine._browser import Browser as Browser
from engine._browser import connect as connect
from engine._browser import launch as launch
from engine._connection import ConnectionStatistics as ConnectionStatistics
from engine._dialogs import Dialog as Dialog
from engine._errors import ActionError as ActionError
from engine._errors import BrowserLaunchError as BrowserLaunchError
from engine._errors import CDPError as CDPError
from engine._errors import ConnectError as ConnectError
from engine._errors import ConnectionClosed as ConnectionClosed
from engine._errors import ContextDestroyed as ContextDestroyed
from engine._errors import EvaluateDisabled as EvaluateDisabled
from engine._errors import EvaluateTimeout as EvaluateTimeout
from engine._errors import EventOverflow as EventOverflow
from engine._errors import InvalidParams as InvalidParams
from engine._errors import JavaScriptError as JavaScriptError
from engine._errors import MessageTooLarge as MessageTooLarge
from engine._errors import NavigationError as NavigationError
from engine._errors import ProtocolError as ProtocolError
from engine._errors import ResponseDecodeError as ResponseDecodeError
from engine._errors import SessionDetached as SessionDetached
from engine._errors import StaleRefError as StaleRefError
from engine._errors import StepsValidationError as StepsValidationError
from engine._errors import TargetCrashed as TargetCrashed
from engine._frames import Frame as Frame
from engine._metrics import EvaluateMetrics as EvaluateMetrics
from engine._names import UnknownName as UnknownName
from engine._page import Page as Page
from engine._popups import Popup as Popup
from engine._refs import Ref as Ref
from engine._refs import ResolvedNode as ResolvedNode
from engine._refs import Snapshot as Snapshot
from engine._refs import SnapshotStats as SnapshotStats
from engine._session import Session as Session
from engine._session import Subscription as Subscription
from engine._session import SubscriptionStatistics as SubscriptionStatistics
from engine._settings import Settings as Settings
from engine._values import body_bytes as body_bytes
from engine._values import check_result as check_result
from engine._values import describe as describe
from engine._values import exception_message as exception_message
from engine._values import js_value as js_value
from engine._values import response_body as response_body

__all__ = [
    "ActionError",
    "Browser",
    "BrowserLaunchError",
    "CDPError",
    "ConnectError",
    "ConnectionClosed",
    "ConnectionStatistics",
    "ContextDestroyed",
    "Dialog",
    "EvaluateDisabled",
    "EvaluateMetrics",
    "EvaluateTimeout",
    "EventOverflow",
    "Frame",
    "InvalidParams",
    "JavaScriptError",
    "MessageTooLarge",
    "NavigationError",
    "Page",
    "Popup",
    "ProtocolError",
    "Ref",
    "ResolvedNode",
    "ResponseDecodeError",
    "Session",
    "SessionDetached",
    "Settings",
    "Snapshot",
    "SnapshotStats",
    "StaleRefError",
    "StepsValidationError",
    "Subscription",
    "SubscriptionStatistics",
    "TargetCrashed",
    "UnknownName",
    "body_bytes",
    "check_result",
    "connect",
    "connect_in_background",
    "describe",
    "exception_message",
    "js_value",
    "launch",
    "launch_in_background",
    "response_body",
]
