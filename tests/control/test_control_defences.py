"""The control endpoint's defences (issue 17, defects 5 and 9): loopback Host names only, no other web origin,
JSON bodies only, an optional bearer token, and bounded request lines, headers and bodies answered with
proper HTTP errors. Each request that must be refused is one that today's endpoint served."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rebalance_lab.api import Emulator
from tests.control.raw_http import Answer, call, exchange, request


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(brokers=2, control_port=0) as running:
        yield running


def url(emu: Emulator) -> str:
    assert emu.control_url is not None
    return emu.control_url


def broker_0_up(emu: Emulator) -> bool:
    return bool(emu.brokers()[0]["up"])


def port(emu: Emulator) -> int:
    return int(url(emu).rsplit(":", 1)[1])


# -- Host: a DNS rebinding defence ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", "10.0.0.1",
                                  "localhost.evil.example", "127.0.0.1:{port}@evil", "[::1]x"])
async def test_a_request_naming_a_host_that_is_not_loopback_is_refused_with_421(emu: Emulator, host: str) -> None:
    answer = await call(url(emu), "POST", "/brokers/0/down", host=host.format(port=port(emu)))
    assert answer.status == 421 and "loopback host names" in answer.error
    assert broker_0_up(emu)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}", "127.0.0.1"])
async def test_loopback_host_names_are_served(emu: Emulator, host: str) -> None:
    answer = await call(url(emu), "GET", "/brokers", host=host.format(port=port(emu)))
    assert answer.status == 200 and [b["node_id"] for b in answer.body] == [0, 1]


async def test_a_request_without_a_host_header_is_a_400(emu: Emulator) -> None:
    answer = await exchange(url(emu), b"GET /brokers HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert answer.status == 400 and "Host header is required" in answer.error


# -- other web origins ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["http://127.0.0.1:1", "http://localhost:{port}", "null", "https://evil.example",
                                    "http://127.0.0.1:{port}.evil.example"])
async def test_an_unsafe_request_from_another_web_origin_is_refused_and_changes_nothing(emu: Emulator,
                                                                                      origin: str) -> None:
    answer = await call(url(emu), "POST", "/brokers/0/down", headers={"Origin": origin.format(port=port(emu))})
    assert answer.status == 403 and "origin" in answer.error
    assert broker_0_up(emu)
    assert not any(name.startswith("access-control-") for name in answer.headers)


async def test_a_request_from_the_endpoints_own_origin_is_served(emu: Emulator) -> None:
    answer = await call(url(emu), "POST", "/brokers/0/down", headers={"Origin": url(emu)})
    assert answer.status == 200 and not broker_0_up(emu)


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
async def test_a_request_a_browser_marks_as_from_another_site_is_refused(emu: Emulator, site: str) -> None:
    answer = await call(url(emu), "POST", "/brokers/0/down", headers={"Sec-Fetch-Site": site})
    assert answer.status == 403 and broker_0_up(emu)


async def test_a_cors_preflight_gets_no_access_control_headers(emu: Emulator) -> None:
    answer = await call(url(emu), "OPTIONS", "/faults", headers={
        "Origin": "http://127.0.0.1:1", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert answer.status == 403
    assert not any(name.startswith("access-control-") for name in answer.headers)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; "
                                          "boundary=x", None])
async def test_a_body_not_sent_as_json_is_refused_with_415_and_arms_nothing(emu: Emulator,
                                                                           content_type: str | None) -> None:
    body = b'{"kind": "broker_down", "broker": 0}'
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = await exchange(url(emu), request("POST", "/faults", host=url(emu)[7:], headers=headers, body=body))
    assert answer.status == 415 and "application/json" in answer.error
    assert broker_0_up(emu)


async def test_a_json_body_with_a_charset_is_served(emu: Emulator) -> None:
    answer = await call(url(emu), "POST", "/faults", body={"kind": "broker_down", "broker": 0},
                        headers={"Content-Type": "application/json; charset=utf-8"})
    assert answer.status == 200 and not broker_0_up(emu)


# -- the token ------------------------------------------------------------------------------------------------------


async def test_with_a_control_token_every_request_needs_it_as_a_bearer_token() -> None:
    async with Emulator(control_port=0, control_token="s3cret-token") as emu:
        missing = await call(url(emu), "GET", "/brokers")
        wrong = await call(url(emu), "POST", "/brokers/0/down", headers={"Authorization": "Bearer s3cret-tokeN"})
        basic = await call(url(emu), "GET", "/brokers", headers={"Authorization": "Basic s3cret-token"})
        right = await call(url(emu), "GET", "/brokers", headers={"Authorization": "Bearer s3cret-token"})
        assert [missing.status, wrong.status, basic.status, right.status] == [401, 401, 401, 200]
        assert missing.headers["www-authenticate"].startswith("Bearer") and "--control-token" in missing.error
        assert broker_0_up(emu)


# -- bounds: proper HTTP errors instead of a traceback (defect 9) ---------------------------------------------------


def oversized_header_lines(emu: Emulator) -> bytes:
    return request("GET", "/brokers", host=url(emu)[7:], headers={f"X-{i}": "v" for i in range(101)})


@pytest.mark.parametrize(("build", "status", "message"), [
    (lambda e: request("GET", "/groups/" + "a" * 70_000, host=url(e)[7:]), 414, "request line is longer"),
    (oversized_header_lines, 431, "more than 100 header lines"),
    (lambda e: request("GET", "/brokers", host=url(e)[7:], headers={"X-Big": "b" * 70_000}), 431, "header line"),
    (lambda e: request("GET", "/brokers", host=url(e)[7:], headers={f"X-{i}": "c" * 1_000 for i in range(70)}),
     431, "header lines are longer"),
    (lambda e: request("POST", "/faults", host=url(e)[7:], headers={"Content-Length": str(2 << 20)}), 413,
     "larger than the limit"),
    (lambda e: request("POST", "/faults", host=url(e)[7:], headers={"Transfer-Encoding": "chunked"}), 411,
     "chunked"),
    (lambda e: request("POST", "/faults", host=url(e)[7:], headers={"Content-Length": "-5"}), 400, "not a number"),
    (lambda e: b"GET /brokers HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", 505, "not supported"),
    (lambda e: b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "malformed request line"),
    (lambda e: b"GET /brokers HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n", 400, "malformed header line"),
])
async def test_requests_out_of_bounds_get_an_http_error_with_a_json_body_and_the_endpoint_keeps_serving(
    emu: Emulator, build: object, status: int, message: str
) -> None:
    assert callable(build)
    answer: Answer = await exchange(url(emu), build(emu))
    assert (answer.status, answer.headers["connection"]) == (status, "close") and message in answer.error
    assert (await call(url(emu), "GET", "/brokers")).status == 200
