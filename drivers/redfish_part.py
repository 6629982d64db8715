"""What the Redfish driver's mixins (`LogReader` in drivers/redfish_log.py, `EventSubscriber` in
drivers/redfish_events.py) use of `RedfishBMC` (drivers/redfish_bmc.py), declared for the type
checker only: nothing here exists at run time, so the driver's own definitions hold."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp

from drivers.base import DeviceError, DriverPart

if TYPE_CHECKING:
    from redfish.aio import AsyncRedfishClient
    from redfish.aio.response import AsyncRestResponse

JSON = dict[str, Any]        # a Redfish resource: a JSON object whose members are the service's


class RedfishPart(DriverPart):
    scheme: str
    host: str
    port: int | None
    auth: str | None
    timeout_s: float
    test_message_id: str
    _session: aiohttp.ClientSession | None
    _client: AsyncRedfishClient | None
    _password: str | None
    if TYPE_CHECKING:
        def _clean(self, text: str) -> str: ...

        def _fail(self, kind: str, message: str) -> DeviceError: ...

        async def _get_json(self, uri: str, what: str, urgent: bool = True,
                            max_wait_s: float | None = None) -> tuple[JSON, int, int, str]: ...

        async def _service_root(self) -> JSON: ...

        async def _exchange(self, method: str, uri: str, body: JSON | None = None, what: str = "",
                            urgent: bool = True, max_wait_s: float | None = None,
                            ) -> tuple[AsyncRestResponse, int, int, str]: ...
