"""The control endpoint's routes: (method, path, JSON body) -> (status, JSON), with no I/O.

Runs on the emulator's loop (the HTTP server shares it), so every call sees a consistent
world. Bad input is a 400, an unknown group, member, broker or path a 404, an action the
group's state does not allow a 409; every error body is ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from rebalance_lab.control.live_routes import LiveRoutes
from rebalance_lab.control.views import any_group_json, brokers_json, groups_json, history_of, offsets_json
from rebalance_lab.coordinator.classic.admin import AdminError, NotFound
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.world import World
from rebalance_lab.faults.controller import FaultController, faults_of

Json = Any
Advance = Callable[[int], None]


class Reply(NamedTuple):
    status: int
    payload: Json
    headers: tuple[tuple[str, str], ...] = ()


Response = tuple[int, Json] | Reply


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Body:
    """Typed access to a JSON object body; a wrong or missing field is a 400 naming it."""

    def __init__(self, raw: bytes) -> None:
        try:
            data = json.loads(raw or b"{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise HttpError(400, f"the body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise HttpError(400, "the body must be a JSON object")
        self.data: dict[str, Any] = data

    def opt_int(self, name: str, default: int | None = None, *, required: bool = False) -> int | None:
        value = self.data.get(name, default)
        if value is None and required:
            raise HttpError(400, f"'{name}' is required (an integer)")
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise HttpError(400, f"'{name}' must be an integer, not {json.dumps(value)}")
        return value

    def need_int(self, name: str) -> int:
        value = self.opt_int(name, required=True)
        assert value is not None
        return value

    def opt_str(self, name: str, *, required: bool = False) -> str | None:
        value = self.data.get(name)
        if value is None and required:
            raise HttpError(400, f"'{name}' is required (a string)")
        if value is not None and not isinstance(value, str):
            raise HttpError(400, f"'{name}' must be a string, not {json.dumps(value)}")
        return value

    def need_str(self, name: str) -> str:
        value = self.opt_str(name, required=True)
        assert value is not None
        return value

    def api_or_error(self, name: str) -> int | str | None:
        value = self.data.get(name)
        if value is not None and (not isinstance(value, int | str) or isinstance(value, bool)):
            raise HttpError(400, f"'{name}' must be a name or a number")
        return value


FaultAction = Callable[[FaultController, Body], Json]


def _error(f: FaultController, b: Body) -> Json:
    api, error = b.api_or_error("api"), b.api_or_error("error")
    if api is None or error is None:
        raise HttpError(400, "an error fault needs 'api' (e.g. \"Heartbeat\") and 'error' (e.g. 27)")
    f.inject_error(api, error, count=b.opt_int("count", 1) or 1, group_id=b.opt_str("group_id"),
                   member_id=b.opt_str("member_id"), broker=b.opt_int("broker"))
    return {"armed": "error"}


def _delay(throttle: bool) -> FaultAction:
    def action(f: FaultController, b: Body) -> Json:
        add = f.throttle if throttle else f.add_latency
        add(b.need_int("ms"), api=b.api_or_error("api"), broker=b.opt_int("broker"), count=b.opt_int("count"))
        return {"armed": "throttle" if throttle else "latency"}

    return action


def _broker_down(f: FaultController, b: Body) -> Json:
    f.broker_down(b.need_int("broker"))
    return {"broker": b.data["broker"], "up": False}


def _broker_up(f: FaultController, b: Body) -> Json:
    f.broker_up(b.need_int("broker"))
    return {"broker": b.data["broker"], "up": True}


def _move(f: FaultController, b: Body) -> Json:
    f.move_coordinator(b.need_str("group_id"), b.need_int("broker"))
    return {"group_id": b.data["group_id"], "coordinator": b.data["broker"]}


def _loading(f: FaultController, b: Body) -> Json:
    f.load_in_progress(b.need_int("ms"))
    return {"loading_ms": b.data["ms"]}


def _force(f: FaultController, b: Body) -> Json:
    f.force_rebalance(b.need_str("group_id"))
    return {"rebalancing": b.data["group_id"]}


def _expire(f: FaultController, b: Body) -> Json:
    f.expire_member(b.need_str("group_id"), b.need_str("member_id"))
    return {"expired": b.data["member_id"]}


def _fence(f: FaultController, b: Body) -> Json:
    f.fence_member(b.need_str("group_id"), b.need_str("member_id"))
    return {"fenced": b.data["member_id"]}


def _bump(f: FaultController, b: Body) -> Json:
    return {"group_id": b.data.get("group_id"), "group_epoch": f.bump_epoch(b.need_str("group_id"))}


def _clear(f: FaultController, _b: Body) -> Json:
    f.clear()
    return {"cleared": True}


FAULTS: dict[str, FaultAction] = {
    "error": _error,
    "latency": _delay(throttle=False),
    "throttle": _delay(throttle=True),
    "close_connections": lambda f, b: {"closed": f.close_client_connections(b.need_str("client_id"))},
    "broker_down": _broker_down,
    "broker_up": _broker_up,
    "move_coordinator": _move,
    "load_in_progress": _loading,
    "force_rebalance": _force,
    "expire_member": _expire,
    "fence_member": _fence,
    "bump_epoch": _bump,
    "clear": _clear,
}


class Router:
    def __init__(self, world: World, advance: Advance) -> None:
        self.world = world
        self.advance = advance
        self.live = LiveRoutes(world)  # the live page (issue 19)
        self._routes: list[tuple[str, re.Pattern[str], Callable[..., Response]]] = [
            ("GET", re.compile(r"/"), lambda b: Reply(*self.live.page())),
            ("GET", re.compile(r"/static/([^/]+)"), self._static),
            ("GET", re.compile(r"/events"), lambda b: Reply(*self.live.events())),
            ("GET", re.compile(r"/groups"), self._groups),
            ("GET", re.compile(r"/groups/([^/]+)"), self._group),
            ("GET", re.compile(r"/groups/([^/]+)/offsets"), self._offsets),
            ("GET", re.compile(r"/groups/([^/]+)/history"), self._history),
            ("GET", re.compile(r"/history"), lambda b: (200, history_of(self.world).store.summary())),
            ("GET", re.compile(r"/brokers"), lambda b: (200, brokers_json(self.world))),
            ("POST", re.compile(r"/faults"), self._fault),
            ("DELETE", re.compile(r"/faults"), lambda b: self._run_fault("clear", b)),
            ("POST", re.compile(r"/advance"), self._advance),
            ("POST", re.compile(r"/groups/([^/]+)/rebalance"), self._rebalance),
            ("POST", re.compile(r"/groups/([^/]+)/members/([^/]+)/expire"), self._expire),
            ("POST", re.compile(r"/groups/([^/]+)/members/([^/]+)/fence"), self._fence),
            ("POST", re.compile(r"/groups/([^/]+)/epoch"), self._bump),
            ("POST", re.compile(r"/groups/([^/]+)/coordinator"), self._coordinator),
            ("POST", re.compile(r"/brokers/(\d+)/(down|up)"), self._broker),
        ]

    def handle(self, method: str, path: str, raw: bytes) -> Reply:
        try:
            reply = self._route(method, path, raw)
            return reply if isinstance(reply, Reply) else Reply(*reply)
        except HttpError as exc:
            return Reply(exc.status, {"error": str(exc)})
        except NotFound as exc:
            return Reply(404, {"error": str(exc)})
        except AdminError as exc:
            return Reply(409, {"error": str(exc)})
        except (ValueError, KeyError) as exc:
            return Reply(400, {"error": str(exc).strip("'\"")})

    def _route(self, method: str, path: str, raw: bytes) -> Response:
        from urllib.parse import unquote

        path = path.split("?", 1)[0].rstrip("/") or "/"
        allowed = []
        for verb, pattern, fn in self._routes:
            match = pattern.fullmatch(path)
            if match is None:
                continue
            if verb != method:
                allowed.append(verb)
                continue
            return fn(Body(raw), *(unquote(g) for g in match.groups()))
        if allowed:
            raise HttpError(405, f"{method} is not allowed on {path}; use {' or '.join(allowed)}")
        raise HttpError(404, f"no such resource: {path}")

    # -- reads --------------------------------------------------------------------------

    def _view(self, group_id: str) -> Json:
        view = any_group_json(self.world, group_id)
        if view is None:
            raise HttpError(404, f"no group {group_id!r}")
        return view

    def _known(self, group_id: str) -> bool:
        service = service_of(self.world)
        return service.coordinator.group(group_id) is not None or service.consumer.has_group(group_id)

    def _groups(self, _b: Body) -> Response:
        return 200, groups_json(self.world)

    def _group(self, _b: Body, group_id: str) -> Response:
        return 200, self._view(group_id)

    def _offsets(self, _b: Body, group_id: str) -> Response:
        offsets = offsets_json(self.world, group_id)
        if not offsets and not self._known(group_id):
            raise HttpError(404, f"no group {group_id!r}")
        return 200, offsets

    def _history(self, _b: Body, group_id: str) -> Response:
        if not self._known(group_id):
            raise HttpError(404, f"no group {group_id!r}")
        history = history_of(self.world).of(group_id)
        # the cap and what it dropped ride in headers, so the answer stays the list of entries it always was
        return Reply(200, history, (("X-History-Limit", str(history.limit)),
                                    ("X-History-Dropped", str(history.dropped))))

    # -- actions ------------------------------------------------------------------------

    def _run_fault(self, kind: str, body: Body) -> Response:
        action = FAULTS.get(kind)
        if action is None:
            raise HttpError(400, f"unknown fault kind {kind!r}; one of {', '.join(FAULTS)}")
        return 200, action(faults_of(self.world), body)

    def _fault(self, body: Body) -> Response:
        return self._run_fault(body.need_str("kind"), body)

    def _static(self, _b: Body, name: str) -> Response:
        reply = self.live.static(name)
        if reply is None:
            raise HttpError(404, f"no such resource: /static/{name}")
        return Reply(*reply)

    def _advance(self, body: Body) -> Response:
        to = body.opt_str("to")
        if to not in (None, "next_timer"):
            raise HttpError(400, f"'to' can only be \"next_timer\", not {to!r}")
        ms = None if to is not None else body.need_int("ms")
        if ms is not None and ms < 0:
            raise HttpError(400, "'ms' cannot be negative")
        if not self.world.clock.manual:
            raise HttpError(409, "advance needs an emulator on a manual clock (manual_clock=True)")
        ms = self._next_timer_ms() if ms is None else ms
        self.advance(ms)
        self.live.feed.touch()  # the page shows the clock
        return 200, {"now_ms": self.world.now_ms(), "advanced_ms": ms}

    def _next_timer_ms(self) -> int:
        """``{"to": "next_timer"}``: as far as the earliest pending group timer (the live page's button): a join's
        delay or timeout, a session, a rebalance timeout. The offsets' retention check (every 10 minutes) is not
        one a lesson wants to jump to."""
        deadline = service_of(self.world).next_deadline()
        if deadline is None:
            raise HttpError(409, "no group timer is pending")
        return max(0, deadline - self.world.now_ms())

    def _rebalance(self, body: Body, group_id: str) -> Response:
        body.data["group_id"] = group_id
        return self._run_fault("force_rebalance", body)

    def _expire(self, body: Body, group_id: str, member_id: str) -> Response:
        body.data.update(group_id=group_id, member_id=member_id)
        return self._run_fault("expire_member", body)

    def _fence(self, body: Body, group_id: str, member_id: str) -> Response:
        body.data.update(group_id=group_id, member_id=member_id)
        return self._run_fault("fence_member", body)

    def _bump(self, body: Body, group_id: str) -> Response:
        body.data["group_id"] = group_id
        return self._run_fault("bump_epoch", body)

    def _coordinator(self, body: Body, group_id: str) -> Response:
        body.data["group_id"] = group_id
        return self._run_fault("move_coordinator", body)

    def _broker(self, body: Body, broker: str, direction: str) -> Response:
        body.data["broker"] = int(broker)
        if int(broker) not in self.world.nodes:
            raise HttpError(404, f"no broker {broker}; brokers are {sorted(self.world.nodes)}")
        return self._run_fault(f"broker_{direction}", body)
