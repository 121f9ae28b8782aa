"""Outbound address safety: which callback URLs may be called, checked with a fake resolver."""

from __future__ import annotations

import ipaddress
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from hookline.adapters.http import lookup
from hookline.adapters.http.safety import ResolvedTarget, Resolver, check_url, parse_url, refusal_reason
from hookline.api.errors import failure_response
from hookline.domain.errors import DnsTimeout, UnresolvedHost, UnsafeUrl

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
def test_given_non_global_address_when_classified_then_the_reason_names_its_kind(
    address: str, reason: str
) -> None:
    assert reason in (refusal_reason(ipaddress.ip_address(address), allow_loopback=False) or "")


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_given_name_resolving_to_non_global_address_when_checked_then_unsafe_without_naming_it(
    address: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="hookline.adapters.http.safety")

    with pytest.raises(UnsafeUrl) as caught:
        check_url(f"https://{HOST}/hook", allow_loopback=False, resolver=resolving_to(address))

    # The message reaches the tenant: what a name resolves to would map the VPC's private DNS for them.
    assert caught.value.code == "unsafe_url"
    assert str(caught.value) == f"callback host '{HOST}' is not a public address"
    # The detail stays in the log, at debug level only.
    assert all(r.levelno <= logging.DEBUG for r in caplog.records)
    assert [(r.address, r.reason) for r in caplog.records] == [  # type: ignore[attr-defined]
        (str(ipaddress.ip_address(address)), refusal_reason(ipaddress.ip_address(address), False))
    ]


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

    assert target == ResolvedTarget("https", HOST, 443, "/hook?a=1", ips=(pinned,))


def test_given_several_global_addresses_when_checked_then_every_one_kept_in_order_once() -> None:
    resolver = resolving_to("2606:4700::1111", "93.184.216.34", "::ffff:93.184.216.34", "93.184.216.35")

    target = check_url(f"https://{HOST}/hook", allow_loopback=False, resolver=resolver)

    assert target.ips == ("2606:4700::1111", "93.184.216.34", "93.184.216.35")


def test_given_one_private_answer_among_public_when_checked_then_unsafe_naming_neither() -> None:
    resolver = resolving_to("93.184.216.34", "10.0.0.5")

    with pytest.raises(UnsafeUrl, match="is not a public address") as caught:
        check_url(f"http://{HOST}/", allow_loopback=False, resolver=resolver)

    assert "10.0.0.5" not in str(caught.value) and "93.184.216.34" not in str(caught.value)


def test_given_resolver_answering_a_non_address_when_checked_then_unsafe_without_echoing_it() -> None:
    with pytest.raises(UnsafeUrl, match="not an IP address") as caught:
        check_url(f"http://{HOST}/", allow_loopback=False, resolver=resolving_to("10.0.0.5%internal"))

    assert "10.0.0.5" not in str(caught.value)


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
    assert check_url(url, allow_loopback=False, resolver=forbidden_resolver).ips == (ip,)


def test_given_ip_literal_loopback_when_checked_then_unsafe_saying_which_kind() -> None:
    # A literal is the tenant's own input: saying what kind of address it is reveals nothing.
    message = "callback host '127.0.0.1' is not a public address: it is a loopback address"
    with pytest.raises(UnsafeUrl, match=re.escape(message)):
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
    with pytest.raises(UnsafeUrl, match=r"is not a public address$"):
        check_url(f"http://{host}/", allow_loopback=False)


@pytest.fixture
def hanging() -> Iterator[Resolver]:
    """Yields a resolver that hangs until the test ends (10 s at most), like a name nobody answers for."""
    release = threading.Event()

    def hang(host: str, port: int) -> Sequence[str]:
        release.wait(timeout=10)
        return ["93.184.216.34"]

    yield hang
    release.set()
    deadline_s = time.monotonic() + 5.0  # the released lookups end on their helper threads
    while lookup.names_in_flight() and time.monotonic() < deadline_s:
        time.sleep(0.01)


def test_given_lookup_that_hangs_when_checked_then_dns_timeout_at_the_limit(hanging: Resolver) -> None:
    started = time.monotonic()
    with pytest.raises(DnsTimeout, match=re.escape("did not resolve within 0.3 s")) as caught:
        check_url(f"https://{HOST}/", allow_loopback=False, resolver=hanging, lookup_timeout_s=0.3)
    waited_s = time.monotonic() - started

    assert 0.25 <= waited_s < 1.0
    assert (caught.value.code, caught.value.http_status) == ("dns_timeout", 503)


def test_given_lookup_that_hangs_when_checked_with_the_default_limit_then_dns_timeout_after_2_s(
    hanging: Resolver,
) -> None:
    # What submit does: the wiring calls check_url(url, allow_loopback) with no limit of its own.
    started = time.monotonic()
    with pytest.raises(DnsTimeout):
        check_url(f"https://{HOST}/", allow_loopback=False, resolver=hanging)
    waited_s = time.monotonic() - started

    assert lookup.SUBMIT_LOOKUP_TIMEOUT_S == 2.0
    assert 1.9 <= waited_s < 3.0


def test_given_dns_timeout_when_answered_by_the_api_then_503_dns_timeout() -> None:
    response = failure_response(DnsTimeout("callback host 'x' did not resolve within 2 s", field="url"))

    assert response.status_code == 503
    assert '"code": "dns_timeout"' in str(response.body)


def test_given_more_lookups_hung_than_helpers_once_allowed_when_a_healthy_name_is_checked_then_it_resolves(
    hanging: Resolver,
) -> None:
    # Hung lookups once held every helper slot (8), and a name that resolves at once then waited its whole
    # limit for a slot and failed with dns_timeout.
    for n in range(12):
        with pytest.raises(DnsTimeout):
            check_url(
                f"https://hung-{n}.example/", allow_loopback=False, resolver=hanging, lookup_timeout_s=0.05
            )

    target = check_url(
        f"https://{HOST}/", allow_loopback=False, resolver=resolving_to("93.184.216.34"), lookup_timeout_s=2.0
    )

    assert target.ips == ("93.184.216.34",)


def test_given_one_hung_name_checked_again_and_again_then_one_lookup_serves_every_caller(
    hanging: Resolver,
) -> None:
    before = lookup.names_in_flight()
    for _ in range(20):
        with pytest.raises(DnsTimeout):
            check_url(f"https://{HOST}/", allow_loopback=False, resolver=hanging, lookup_timeout_s=0.01)

    assert lookup.names_in_flight() == before + 1


def test_given_too_many_names_in_flight_when_a_new_name_is_checked_then_dns_timeout_at_once(
    hanging: Resolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lookup, "MAX_NAMES_IN_FLIGHT", lookup.names_in_flight() + 2)
    for n in range(2):
        with pytest.raises(DnsTimeout):
            check_url(
                f"https://held-{n}.example/", allow_loopback=False, resolver=hanging, lookup_timeout_s=0.01
            )

    with pytest.raises(DnsTimeout, match="too many lookups in flight"):
        check_url(f"https://{HOST}/", allow_loopback=False, resolver=hanging, lookup_timeout_s=60.0)


def test_given_lookups_one_after_another_when_checked_then_one_helper_thread_serves_them_all() -> None:
    def helpers() -> int:
        return sum(t.name == lookup.HELPER_THREAD_NAME for t in threading.enumerate())

    before = helpers()  # idle helpers of earlier tests wait a while for more work
    for n in range(50):
        check_url(f"https://name-{n}.example/", allow_loopback=False, resolver=resolving_to("93.184.216.34"))

    assert helpers() <= max(before, 1)
