"""Outbound address safety: a callback may only reach globally routable addresses.

Without this check a tenant could point a callback at the cloud metadata service, at Redis inside the VPC
or at the executor's own loopback, and read the answer back from the execution record (SSRF).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, urlsplit

from hookline.adapters.http.lookup import SUBMIT_LOOKUP_TIMEOUT_S, lookup_within
from hookline.domain.errors import UnresolvedHost, UnsafeUrl

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Turns (host, port) into IP address strings; raises OSError when the name does not resolve.
Resolver = Callable[[str, int], Sequence[str]]

DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 reserved and unreserved characters plus "%": quoting leaves a valid target unchanged.
_URL_SAFE_CHARS = "/?#[]@!$&'()*+,;=:%-._~"

_SHARED_V4 = ipaddress.ip_network("100.64.0.0/10")
_PRIVATE_V4 = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
_UNIQUE_LOCAL_V6 = ipaddress.ip_network("fc00::/7")
_NAT64_V6 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE_V6 = ipaddress.ip_network("::/96")


# Answers of the pure checks below kept per argument; an executor calls the same few hosts over and over.
_PURE_CACHE_ENTRIES = 4096


@dataclass(frozen=True)
class ParsedUrl:
    """Holds a callback URL split into the parts a connection needs, before any DNS lookup.

    Attributes:
        scheme: "http" or "https".
        host: The host name in ASCII (IDNA) form, lower-cased; an IPv6 literal has no brackets.
        port: The TCP port, defaulted from the scheme.
        path_and_query: The request target, at least "/"; the fragment is dropped.
    """

    scheme: str
    host: str
    port: int
    path_and_query: str


@dataclass(frozen=True)
class ResolvedTarget(ParsedUrl):
    """Holds a callback URL that passed the safety check, with the addresses to connect to.

    Attributes:
        ips: Every checked address, in the resolver's order without repeats (IPv4-mapped ones in IPv4
            form); a connection uses only these (pinned, so a second DNS answer cannot differ) and tries
            them in turn, so one dead address, or IPv6 without an IPv6 route, does not fail the name.
    """

    ips: tuple[str, ...]


def resolve_with_getaddrinfo(host: str, port: int) -> list[str]:
    """Resolves host through the system resolver.

    Args:
        host: A host name or IP literal.
        port: The TCP port (getaddrinfo wants one; it does not change the answer).

    Returns:
        Every address the resolver gave, in its order.

    Raises:
        OSError: The name does not resolve.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def check_url(
    url: str,
    allow_loopback: bool,
    resolver: Resolver = resolve_with_getaddrinfo,
    *,
    lookup_timeout_s: float | None = SUBMIT_LOOKUP_TIMEOUT_S,
) -> ResolvedTarget:
    """Checks that url may be called and returns where to connect.

    Every resolved address must be safe, not just the first: a name with one public and one private
    answer would otherwise reach the private one whenever the client picks it.

    A refusal never says what a name resolves to: the message reaches the tenant (API answer, execution
    record), and naming the address would let a tenant read the VPC's private DNS through Hookline. The
    address and the reason go to the debug log only. An IP literal is the tenant's own input, so its
    refusal says which kind of address it is.

    Args:
        url: The callback URL as the tenant gave it.
        allow_loopback: Lets 127.0.0.0/8 and ::1 through, for local development only.
        resolver: Looks names up; injected so tests need no DNS.
        lookup_timeout_s: How long the lookup may take (see `lookup.lookup_within`); None when resolver
            bounds itself, as the callback client's does with the attempt's deadline.

    Returns:
        The parsed URL with every resolved address, all of them checked.

    Raises:
        DnsTimeout: The lookup did not finish within lookup_timeout_s.
        UnsafeUrl: The URL is malformed, uses another scheme, carries credentials, does not resolve
            or resolves to an address that is not globally routable.
    """
    parsed = parse_url(url)
    lookup = resolver
    if lookup_timeout_s is not None:
        limit_s = lookup_timeout_s

        def lookup(host: str, port: int) -> Sequence[str]:
            return lookup_within(resolver, host, port, limit_s)

    literal = _ip_literal(parsed.host)
    addresses = [literal] if literal is not None else _resolve(parsed.host, parsed.port, lookup)
    for address in addresses:
        reason = refusal_reason(address, allow_loopback)
        if reason is None:
            continue
        detail = {"host": parsed.host, "address": str(address), "reason": reason}
        logger.debug("callback host refused", extra=detail)
        message = f"callback host {parsed.host!r} is not a public address"
        raise UnsafeUrl(message + (f": it is {reason}" if literal is not None else ""), field="url")
    pinned = tuple(dict.fromkeys(str(_unmapped(address)) for address in addresses))
    return ResolvedTarget(parsed.scheme, parsed.host, parsed.port, parsed.path_and_query, ips=pinned)


@lru_cache(maxsize=_PURE_CACHE_ENTRIES)
def refusal_reason(address: IPAddress, allow_loopback: bool) -> str | None:
    """Says why address must not be called, or None when it may be (pure, so its answers are kept).

    Args:
        address: One resolved address.
        allow_loopback: Lets 127.0.0.0/8 and ::1 through.

    Returns:
        A short phrase for the error message, or None.
    """
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            # ::ffff:a.b.c.d is the IPv4 address itself on a dual-stack socket.
            return refusal_reason(address.ipv4_mapped, allow_loopback)
        embedded = _tunnelled_ipv4(address)
        if embedded is not None:
            # 6to4 and NAT64 relays forward to the embedded IPv4 address, so that address decides.
            inner = _ipv4_reason(embedded, allow_loopback=False)
            return None if inner is None else f"which embeds {embedded}, {inner}"
        if address in _IPV4_COMPATIBLE_V6 and int(address) > 1:
            return "a deprecated IPv4-compatible IPv6 address"
        return _ipv6_reason(address, allow_loopback)
    return _ipv4_reason(address, allow_loopback)


def _ipv4_reason(address: ipaddress.IPv4Address, allow_loopback: bool) -> str | None:
    """Classifies one IPv4 address; None means globally routable."""
    if address.is_loopback:
        return None if allow_loopback else "a loopback address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_link_local:
        return "a link-local address (cloud metadata lives at 169.254.169.254)"
    if address.is_multicast:
        return "a multicast address"
    if address in _SHARED_V4:
        return "a shared (carrier-grade NAT) address"
    if any(address in network for network in _PRIVATE_V4):
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "a special-purpose address that is not globally routable"
    return None


def _ipv6_reason(address: ipaddress.IPv6Address, allow_loopback: bool) -> str | None:
    """Classifies one IPv6 address that embeds no IPv4 address; None means globally routable."""
    if address.is_loopback:
        return None if allow_loopback else "a loopback address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_site_local:
        return "a site-local address"
    if address.is_multicast:
        return "a multicast address"
    if address in _UNIQUE_LOCAL_V6:
        return "a private (unique local) address"
    if address.is_reserved:
        return "a reserved address"
    # Teredo (2001::/32) and documentation ranges land here: ipaddress marks them not global.
    if not address.is_global:
        return "a special-purpose address that is not globally routable"
    return None


def _tunnelled_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """Returns the IPv4 address a 6to4 or NAT64 address forwards to, if it is one."""
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64_V6:
        return ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    return None


def _unmapped(address: IPAddress) -> IPAddress:
    """Returns the IPv4 form of an IPv4-mapped address, so the connection uses an IPv4 socket."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@lru_cache(maxsize=_PURE_CACHE_ENTRIES)
def parse_url(url: str) -> ParsedUrl:
    """Splits url into the parts a connection needs, refusing what Hookline never calls.

    Pure, and every attempt checks its URL again: answers are kept for the URLs seen last (a refusal is
    an exception, which is not kept).

    Args:
        url: A callback URL.

    Returns:
        The parts, with the host in ASCII form and the port defaulted.

    Raises:
        UnsafeUrl: The URL is malformed, not http(s), carries credentials or has no host.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl(f"callback URL is malformed: {exc}", field="url") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise UnsafeUrl("callback URL must use http or https", field="url")
    if parts.username is not None or parts.password is not None:
        raise UnsafeUrl("callback URL must not contain credentials (user:password@)", field="url")
    if not parts.hostname:
        raise UnsafeUrl("callback URL has no host", field="url")
    try:
        host = parts.hostname.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise UnsafeUrl(f"callback host {parts.hostname!r} is not a valid host name", field="url") from exc
    path_and_query = parts.path or "/"
    if parts.query:
        path_and_query += "?" + parts.query
    # Percent-encode anything outside ASCII so the request line is valid; existing escapes stay as they are.
    path_and_query = quote(path_and_query, safe=_URL_SAFE_CHARS)
    return ParsedUrl(scheme, host, port if port is not None else DEFAULT_PORTS[scheme], path_and_query)


@lru_cache(maxsize=_PURE_CACHE_ENTRIES)
def _ip_literal(host: str) -> IPAddress | None:
    """Returns host as an address when it is an IP literal (which needs no lookup), else None."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _resolve(host: str, port: int, resolver: Resolver) -> list[IPAddress]:
    """Returns every address of the name host."""
    try:
        answers = resolver(host, port)
    except UnicodeError as exc:  # not a valid host name (IDNA): no lookup can ever succeed
        raise UnsafeUrl(f"callback host {host!r} is not a valid host name", field="url") from exc
    except OSError as exc:
        raise UnresolvedHost(f"callback host {host!r} does not resolve ({exc})", field="url") from exc
    addresses = []
    for answer in answers:
        try:
            addresses.append(ipaddress.ip_address(answer))
        except ValueError as exc:
            # The answer itself stays out of the message, like any resolved address (see check_url).
            logger.debug("resolver gave a non-address", extra={"host": host, "answer": repr(answer)})
            message = f"callback host {host!r} resolved to something that is not an IP address"
            raise UnsafeUrl(message, field="url") from exc
    if not addresses:
        raise UnresolvedHost(f"callback host {host!r} does not resolve", field="url")
    return addresses
