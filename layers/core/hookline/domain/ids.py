"""Time-ordered identifiers (ULID layout: 48-bit ms timestamp + 80 random bits, Crockford base32)."""

import hashlib
import secrets

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_LENGTH = 26


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(now_ms: int) -> str:
    """Returns a new id that sorts after every id made in an earlier millisecond."""
    return _encode((now_ms << 80) | secrets.randbits(80), ID_LENGTH)


def derived_id(now_ms: int, seed: str) -> str:
    """Returns the id that (now_ms, seed) always maps to; for ids that must be created at most once."""
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:10], "big")
    return _encode((now_ms << 80) | digest, ID_LENGTH)


def is_valid_id(value: str) -> bool:
    """Tells whether value has the shape of an id made here."""
    return len(value) == ID_LENGTH and all(c in _ALPHABET for c in value)
