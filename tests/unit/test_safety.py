"""Outbound address safety: which callback URLs may be called, checked with a fake resolver."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from hookline.adapters.http.safety import ResolvedTarget, Resolver, check_url, parse_url
from hookline.domain.errors import UnresolvedHost, UnsafeUrl

HOST = "hooks.example.com"


def resolving_to(*addresses: str) -> Resolver:
    """Returns a resolver that answers every name with addresses."""

    def resolve(host: str, port: int) -> Sequence[str]:
        return addresses

    return resolve


def not_resolving(host: str, port: int) -> Sequence[str]:
    raise OSError(f"[Errno -2] Name or service not known: {host}")


def forbidden_resolver(host: str, port: int) -> Sequence[str]:
    raise AssertionError("an IP literal must not be resolved")


REFUSED = [
    # (resolved address, words the message must contain)
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("169.254.169.254", "link-local"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("100.64.0.1", "shared"),
    ("100.127.255.254", "shared"),
    ("192.0.2.1", "not globally routable"),
    ("198.18.0.1", "not globally routable"),
    ("2001:db8::1", "not globally routable"),
    ("100::1", "reserved"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::127.0.0.1", "IPv4-compatible"),
    ("::10.0.0.1", "IPv4-compatible"),
    ("2002:c0a8:0101::1", "embeds 192.168.1.1"),
    ("2002:7f00:0001::1", "embeds 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "embeds 169.254.169.254"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "not globally routable"),  # Teredo
]


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_given_non_global_address_when_checked_then_unsafe(address: str, reason: str) -> None:
    with pytest.raises(UnsafeUrl, match=re.escape(reason)) as caught:
        check_url(f"https://{HOST}/hook", allow_loopback=False, resolver=resolving_to(address))

    assert caught.value.code == "unsafe_url"
    assert HOST in str(caught.value)


@pytest.mark.parametrize(
    ("address", "pinned"),
    [
        ("93.184.216.34", "93.184.216.34"),
        ("2606:4700::1111", "2606:4700::1111"),
        ("::ffff:93.184.216.34", "93.184.216.34"),
        ("2002:0808:0808::1", "2002:808:808::1"),
        ("64:ff9b::808:808", "64:ff9b::808:808"),
    ],
)
def test_given_global_address_when_checked_then_pinned(address: str, pinned: str) -> None:
    target = check_url(f"https://{HOST}/hook?a=1", allow_loopback=False, resolver=resolving_to(address))

    assert target == ResolvedTarget("https", HOST, 443, "/hook?a=1", ip=pinned)


def test_given_one_private_answer_among_public_when_checked_then_unsafe() -> None:
    resolver = resolving_to("93.184.216.34", "10.0.0.5")

    with pytest.raises(UnsafeUrl, match=re.escape("10.0.0.5")):
        check_url(f"http://{HOST}/", allow_loopback=False, resolver=resolver)


LOOPBACK_SWITCH = [
    # (address, allowed when allow_loopback=True)
    ("127.0.0.1", True),
    ("127.1.2.3", True),
    ("::1", True),
    ("::ffff:127.0.0.1", True),
    ("10.0.0.1", False),
    ("192.168.0.10", False),
    ("169.254.169.254", False),
    ("fd00::1", False),
    ("0.0.0.0", False),
    ("2002:7f00:0001::1", False),
]


@pytest.mark.parametrize(("address", "allowed"), LOOPBACK_SWITCH)
def test_given_allow_loopback_when_checked_then_only_loopback_passes(address: str, allowed: bool) -> None:
    def check() -> ResolvedTarget:
        return check_url("http://receiver.local:8080/", allow_loopback=True, resolver=resolving_to(address))

    if allowed:
        assert check().port == 8080
    else:
        with pytest.raises(UnsafeUrl):
            check()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.com/x", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("gopher://hooks.example.com/", "http or https"),
        ("hooks.example.com/hook", "http or https"),
        ("https://user:pw@hooks.example.com/", "credentials"),
        ("https://user@hooks.example.com/", "credentials"),
        ("https:///hook", "no host"),
        ("http://", "no host"),
        ("https://hooks.example.com:99999/", "malformed"),
        ("https://[::1/", "malformed"),
        ("https://a..b/", "not a valid host name"),
    ],
)
def test_given_malformed_url_when_checked_then_unsafe(url: str, message: str) -> None:
    with pytest.raises(UnsafeUrl, match=message):
        check_url(url, allow_loopback=True, resolver=resolving_to("93.184.216.34"))


def test_given_unresolvable_host_when_checked_then_does_not_resolve() -> None:
    with pytest.raises(UnresolvedHost, match="does not resolve") as refused:
        check_url(f"https://{HOST}/", allow_loopback=False, resolver=not_resolving)

    assert refused.value.code == "unsafe_url"  # the API refuses it as any unsafe URL


def test_given_empty_answer_when_checked_then_does_not_resolve() -> None:
    with pytest.raises(UnresolvedHost, match="does not resolve"):
        check_url(f"https://{HOST}/", allow_loopback=False, resolver=resolving_to())


def test_given_a_name_idna_cannot_encode_when_checked_then_unsafe_but_not_unresolved() -> None:
    def idna_refuses(host: str, port: int) -> list[str]:
        raise UnicodeError("label empty or too long")

    with pytest.raises(UnsafeUrl, match="not a valid host name") as refused:
        check_url(f"https://{HOST}/", allow_loopback=False, resolver=idna_refuses)

    assert not isinstance(refused.value, UnresolvedHost)


@pytest.mark.parametrize(
    ("url", "ip"),
    [("http://8.8.8.8/", "8.8.8.8"), ("http://[2606:4700::1111]:8443/", "2606:4700::1111")],
)
def test_given_ip_literal_when_checked_then_used_without_resolving(url: str, ip: str) -> None:
    assert check_url(url, allow_loopback=False, resolver=forbidden_resolver).ip == ip


def test_given_ip_literal_loopback_when_checked_then_unsafe() -> None:
    with pytest.raises(UnsafeUrl, match="loopback"):
        check_url("http://127.0.0.1:9000/", allow_loopback=False, resolver=forbidden_resolver)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTPS://Hooks.Example.COM/a/b?x=1#frag", ("https", "hooks.example.com", 443, "/a/b?x=1")),
        ("http://hooks.example.com", ("http", "hooks.example.com", 80, "/")),
        ("http://hooks.example.com:8080/p", ("http", "hooks.example.com", 8080, "/p")),
        ("https://bücher.example/ä?q=é", ("https", "xn--bcher-kva.example", 443, "/%C3%A4?q=%C3%A9")),
        ("https://hooks.example.com/a%20b?x=%2F", ("https", "hooks.example.com", 443, "/a%20b?x=%2F")),
    ],
)
def test_given_url_when_parsed_then_normalised_parts(url: str, expected: tuple[str, str, int, str]) -> None:
    parsed = parse_url(url)

    assert (parsed.scheme, parsed.host, parsed.port, parsed.path_and_query) == expected


@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1"])
def test_given_numeric_loopback_spelling_when_resolved_by_system_then_unsafe(host: str) -> None:
    # The system resolver reads these inet_aton forms as 127.0.0.1 without any DNS traffic.
    with pytest.raises(UnsafeUrl, match="loopback"):
        check_url(f"http://{host}/", allow_loopback=False)
