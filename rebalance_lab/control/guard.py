"""Who may talk to the control endpoint: loopback Host names, no other web origin, an optional bearer token.

The endpoint listens on loopback, but a browser on the same machine is a client too: a page from any
web site can make it send requests there (issue 17, defect 5). Three defences, each its own check:

- **DNS rebinding**: a hostile name that resolves to 127.0.0.1 reaches the endpoint with its own name
  in ``Host``. Only loopback Host names are served (421 otherwise).
- **Cross-site requests**: a page from another origin (another port counts) can send a POST without
  reading the answer. Browsers name the page in ``Origin`` (and ``Sec-Fetch-Site``) on every POST, so a
  request whose origin is not the endpoint's own is refused (403), whatever its method. Bodies must be
  ``application/json`` (415 otherwise): a form or a no-cors ``fetch`` can only send the "simple" content
  types, and JSON from another origin needs a CORS preflight, which the endpoint never grants (it sends
  no ``Access-Control-*`` header at all).
- **Other local users and processes**: ``--control-token`` requires ``Authorization: Bearer TOKEN`` on
  every request (401 otherwise), compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

from rebalance_lab.control.http_wire import HttpProblem, HttpRequest

# Sec-Fetch-Site values of a request a page of the endpoint's own origin, or the user (address bar), made
_SAME_SITE_FETCH = {"same-origin", "none"}


def split_host(value: str) -> tuple[str, str | None]:
    """``host[:port]`` or ``[v6]:port`` -> (host, port or None); the brackets of an IPv6 literal removed."""
    if value.startswith("["):
        host, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return value, None
        return host, rest[1:] or None
    host, colon, port = value.rpartition(":")
    return (host, port) if colon and ":" not in host else (value, None)


def is_loopback_name(host: str) -> bool:
    """``localhost`` or a loopback IP literal (127.0.0.0/8, ::1)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Guard:
    token: str | None = None

    def check(self, request: HttpRequest) -> None:
        """Raise HttpProblem for a request the endpoint must not serve."""
        host = self._host(request)
        self._origin(request, host)
        self._token(request)
        self._content_type(request)

    @staticmethod
    def _host(request: HttpRequest) -> str:
        value = request.header("host")
        if not value:
            raise HttpProblem(400, "a Host header is required")
        name, port = split_host(value)
        if not is_loopback_name(name) or (port is not None and not port.isdigit()):
            raise HttpProblem(421, f"the control endpoint answers only to loopback host names (127.0.0.1, [::1], "
                                   f"localhost), not Host {value[:100]!r}: a DNS rebinding defence")
        return value.lower()

    @staticmethod
    def _origin(request: HttpRequest, host: str) -> None:
        origin = request.header("origin")
        if origin is not None and origin.lower() != f"http://{host}":
            raise HttpProblem(403, f"a request from the web page of origin {origin[:100]!r} is refused: the control "
                                   "endpoint serves no other origin (no CORS)")
        site = request.header("sec-fetch-site")
        if site is not None and site.lower() not in _SAME_SITE_FETCH:
            raise HttpProblem(403, f"a {site[:40]} request from a web page is refused: the control endpoint serves "
                                   "no other origin (no CORS)")

    def _token(self, request: HttpRequest) -> None:
        if self.token is None:
            return
        given = _bearer(request) or _cookie(request) or _page_query(request)
        expected = self.token.encode()
        # compare_digest takes as long for any wrong token of a given length, so timing tells nothing
        if given is None or not hmac.compare_digest(given, expected):
            raise HttpProblem(401, "this control endpoint needs 'Authorization: Bearer <token>' (--control-token)",
                              headers=[("WWW-Authenticate", 'Bearer realm="rebalance-lab control"')])

    @staticmethod
    def _content_type(request: HttpRequest) -> None:
        media = (request.header("content-type") or "").partition(";")[0].strip().lower()
        if media == "application/json" or (not media and not request.body):
            return
        shown = media or "no Content-Type"
        raise HttpProblem(415, f"a request body must be sent as Content-Type: application/json, not {shown}")


# -- where a token may come from ---------------------------------------------------------------------------------------
# A browser cannot add an Authorization header to the live page's address, its EventSource or its script tags: the
# page is opened once as /?token=TOKEN, answered with an HttpOnly, SameSite=Strict cookie (as Jupyter does), and
# the browser sends that cookie with the page's own requests only. Another origin's requests stay refused above.


def token_cookie(request: HttpRequest) -> str:
    """The cookie's name, per port: two emulators on one host keep their own (cookies ignore ports)."""
    _, port = split_host(request.header("host") or "")
    return f"rebalance_lab_token_{port or 80}"


def _bearer(request: HttpRequest) -> bytes | None:
    scheme, _, given = (request.header("authorization") or "").partition(" ")
    return given.strip().encode("latin-1") if scheme.lower() == "bearer" else None


def _cookie(request: HttpRequest) -> bytes | None:
    name = token_cookie(request)
    for pair in (request.header("cookie") or "").split(";"):
        key, _, value = pair.strip().partition("=")
        if key == name:
            return unquote(value).encode()
    return None


def page_token(request: HttpRequest) -> str | None:
    """``GET /?token=TOKEN``: the live page's address as ``serve`` prints it."""
    path, _, query = request.target.partition("?")
    if request.method != "GET" or path != "/" or not query:
        return None
    values = parse_qs(query).get("token")
    return values[-1] if values else None


def _page_query(request: HttpRequest) -> bytes | None:
    token = page_token(request)
    return None if token is None else token.encode()
