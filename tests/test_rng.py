"""rng.py must reproduce the published SplitMix64 and FNV-1a, and its derived draws exactly."""

from __future__ import annotations

from collections import Counter

import pytest

from gossiplab.rng import SplitMix64, fnv1a64, splitmix64_mix, stream_seed

M64 = 2**64


def reference_splitmix64(seed: int, count: int) -> list[int]:
    """Written from the public-domain splitmix64.c (Vigna), independently of rng.py."""
    outputs = []
    x = seed
    for _ in range(count):
        x = (x + 0x9E3779B97F4A7C15) % M64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % M64
        outputs.append(z ^ (z >> 31))
    return outputs


def reference_fnv1a64(data: bytes) -> int:
    h = 14695981039346656037  # 0xcbf29ce484222325
    for byte in data:
        h ^= byte
        h = (h * 1099511628211) % M64  # 0x100000001b3
    return h


def reference_stream_seed(master: int, stream: str, index: int) -> int:
    def mix(z: int) -> int:
        return reference_splitmix64(z, 1)[0]

    return mix(master ^ reference_fnv1a64(stream.encode()) ^ mix(index + 1))


def test_splitmix64_matches_published_outputs() -> None:
    published = [6457827717110365317, 3203168211198807973, 9817491932198370423]
    assert reference_splitmix64(1234567, 3) == published
    rng = SplitMix64(1234567)
    assert [rng.next_u64() for _ in range(3)] == published


def test_splitmix64_matches_reference_over_many_seeds() -> None:
    for seed in (0, 1, 42, 2**63 - 1, 2**64 - 1):
        rng = SplitMix64(seed)
        assert [rng.next_u64() for _ in range(20)] == reference_splitmix64(seed, 20)


def test_fnv1a64_published_vectors() -> None:
    assert fnv1a64("") == 0xCBF29CE484222325
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a64("foobar") == 0x85944171F73967E8


def test_splitmix64_mix_is_first_output() -> None:
    for z in (0, 7, 2**64 - 1):
        assert splitmix64_mix(z) == SplitMix64(z).next_u64()


def test_stream_seed_hard_coded_values() -> None:
    # Snapshots: a change here changes every topology and workload ever generated.
    expected = {
        (42, "topology", 0): 11684014096406845849,
        (42, "workload", 0): 16956276558773570532,
        (42, "workload", 1): 6882192463139735739,
    }
    for (master, stream, index), value in expected.items():
        assert reference_stream_seed(master, stream, index) == value
        assert stream_seed(master, stream, index) == value


def test_streams_differ_by_name_and_index() -> None:
    seeds = {stream_seed(1, name, i) for name in ("topology", "workload") for i in range(50)}
    assert len(seeds) == 100


def test_uniform_in_unit_interval() -> None:
    rng = SplitMix64(3)
    values = [rng.uniform() for _ in range(10_000)]
    assert all(0.0 <= v < 1.0 for v in values)
    assert 0.48 < sum(values) / len(values) < 0.52


def test_uniform_uses_top_53_bits() -> None:
    a, b = SplitMix64(9), SplitMix64(9)
    assert a.uniform() == (b.next_u64() >> 11) / 2**53


def test_randbelow_range_and_balance() -> None:
    rng = SplitMix64(11)
    counts = Counter(rng.randbelow(6) for _ in range(60_000))
    assert set(counts) == set(range(6))
    assert all(9_500 < c < 10_500 for c in counts.values())
    assert SplitMix64(1).randbelow(1) == 0
    with pytest.raises(ValueError):
        rng.randbelow(0)


def test_randbelow_rejects_the_biased_tail() -> None:
    # n = 2**63 + 1: limit is n itself, so about half of all draws are rejected and redrawn.
    n = 2**63 + 1
    reference = SplitMix64(5)
    expected = None
    while expected is None:
        x = reference.next_u64()
        if x < n:
            expected = x % n
    assert SplitMix64(5).randbelow(n) == expected


def dense_sample(rng: SplitMix64, n: int, k: int) -> list[int]:
    items = list(range(n))
    for i in range(k):
        j = i + rng.randbelow(n - i)
        items[i], items[j] = items[j], items[i]
    return items[:k]


def test_sample_equals_dense_fisher_yates() -> None:
    for seed in range(20):
        assert SplitMix64(seed).sample_indices(30, 12) == dense_sample(SplitMix64(seed), 30, 12)


def test_sample_is_distinct_and_maps_population() -> None:
    rng = SplitMix64(4)
    picked = rng.sample(["a", "b", "c", "d", "e"], 5)
    assert sorted(picked) == ["a", "b", "c", "d", "e"]
    assert SplitMix64(4).sample(list(range(100)), 0) == []
    with pytest.raises(ValueError):
        rng.sample([1, 2], 3)


def test_shuffle_is_a_permutation_and_deterministic() -> None:
    a, b = list(range(50)), list(range(50))
    SplitMix64(8).shuffle(a)
    SplitMix64(8).shuffle(b)
    assert a == b
    assert sorted(a) == list(range(50))
    assert a != list(range(50))
