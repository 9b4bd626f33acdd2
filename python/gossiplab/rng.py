"""A tiny deterministic random generator (SplitMix64) and named sub-stream seeds.

Why in-repo: results must be a pure function of the scenario seed, on any machine and with any
library version. Python's ``random`` and numpy's generators may change between releases, and
``hash(str)`` is randomised per process, so neither may decide a topology or a workload.

The algorithm, exactly (all arithmetic modulo 2**64):

SplitMix64 (Steele, Lea, Flood 2014; the public-domain reference ``splitmix64.c``)::

    GOLDEN = 0x9E3779B97F4A7C15
    next_u64():  state = state + GOLDEN
                 return mix(state)
    mix(z):      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
                 z = (z ^ (z >> 27)) * 0x94D049BB133111EB
                 return z ^ (z >> 31)

    splitmix64_mix(z) = mix(z + GOLDEN)   (the first output of a generator seeded with z)

FNV-1a 64 over the UTF-8 bytes of a string::

    h = 0xcbf29ce484222325
    for each byte b:  h = (h ^ b) * 0x100000001b3

Named sub-streams, so that changing one part of a scenario does not reshuffle the others::

    stream_seed(m, s, i) = splitmix64_mix(m ^ fnv1a64(s) ^ splitmix64_mix(i + 1))

Derived draws (the engine must use the same formulas to agree):

- ``uniform()``: ``(next_u64() >> 11) * 2**-53``, a float in [0, 1) with 53 random bits.
- ``randbelow(n)``: rejection sampling without modulo bias: let ``limit = (2**64 // n) * n``;
  draw ``x = next_u64()`` until ``x < limit``; return ``x % n``.
- ``shuffle(a)``: Fisher-Yates from the end: for ``i`` from ``len(a) - 1`` down to 1,
  ``j = randbelow(i + 1)``, swap ``a[i]`` and ``a[j]``.
- ``sample(a, k)``: the first ``k`` steps of a forward Fisher-Yates over the indices
  ``0..n-1``: for ``i`` in ``0..k-1``, ``j = i + randbelow(n - i)``, swap index ``i`` and ``j``,
  take index ``i``. Only displaced indices are stored, so it costs O(k), not O(n).
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from typing import TypeVar

T = TypeVar("T")

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
MIX_MULTIPLIER_1 = 0xBF58476D1CE4E5B9
MIX_MULTIPLIER_2 = 0x94D049BB133111EB
FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3


def _finalize(z: int) -> int:
    """The SplitMix64 output function (a variant of MurmurHash3's fmix64)."""
    z = ((z ^ (z >> 30)) * MIX_MULTIPLIER_1) & MASK64
    z = ((z ^ (z >> 27)) * MIX_MULTIPLIER_2) & MASK64
    return z ^ (z >> 31)


def splitmix64_mix(z: int) -> int:
    """Scramble one 64-bit value: the first output of SplitMix64 seeded with ``z``."""
    return _finalize((z + GOLDEN_GAMMA) & MASK64)


def fnv1a64(text: str) -> int:
    """FNV-1a 64-bit hash of the UTF-8 bytes of ``text``: fixed forever, unlike ``hash()``."""
    h = FNV64_OFFSET
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * FNV64_PRIME) & MASK64
    return h


def stream_seed(master_seed: int, stream: str, index: int = 0) -> int:
    """Seed of the named sub-stream ``stream`` (and entity ``index``) under ``master_seed``."""
    mixed_index = splitmix64_mix((index + 1) & MASK64)
    return splitmix64_mix((master_seed & MASK64) ^ fnv1a64(stream) ^ mixed_index)


class SplitMix64:
    """The SplitMix64 generator with the few derived draws gossiplab needs."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next_u64(self) -> int:
        self.state = (self.state + GOLDEN_GAMMA) & MASK64
        return _finalize(self.state)

    def uniform(self) -> float:
        """A float in [0, 1): the top 53 bits of one draw, so every value is exact."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def randbelow(self, n: int) -> int:
        """An integer in [0, n), every value equally likely (rejection, not plain modulo)."""
        if n <= 0:
            raise ValueError(f"randbelow needs n >= 1, got {n}")
        # The largest multiple of n that fits: draws at or above it would favour small results.
        limit = ((1 << 64) // n) * n
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Shuffle ``items`` in place (Fisher-Yates from the end)."""
        for i in range(len(items) - 1, 0, -1):
            j = self.randbelow(i + 1)
            items[i], items[j] = items[j], items[i]

    def sample_indices(self, n: int, k: int) -> list[int]:
        """``k`` distinct indices from ``range(n)``, in draw order."""
        if not 0 <= k <= n:
            raise ValueError(f"cannot sample {k} distinct items from {n}")
        # Sparse Fisher-Yates: ``displaced[i]`` holds what a dense array would have at slot i.
        displaced: dict[int, int] = {}
        chosen: list[int] = []
        for i in range(k):
            j = i + self.randbelow(n - i)
            at_j = displaced.get(j, j)
            displaced[j] = displaced.get(i, i)
            chosen.append(at_j)
        return chosen

    def sample(self, population: Sequence[T], k: int) -> list[T]:
        """``k`` distinct elements of ``population`` (distinct positions), in draw order."""
        return [population[i] for i in self.sample_indices(len(population), k)]
