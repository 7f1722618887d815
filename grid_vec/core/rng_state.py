"""A numpy generator's state as plain numbers, for snapshots (no pickle to store it).

numpy's PCG64 (``np.random.default_rng``'s, and gymnasium's ``np_random``'s) and PCG64DXSM
keep a 128-bit state and a 128-bit increment: :class:`RngState` holds them as Python ints
(reading them costs one ``bit_generator.state``), and :attr:`RngState.words` as 64-bit
halves in one uint64 array, which no 128-bit number fits in otherwise.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_MASK = (1 << 64) - 1
_KINDS = ("PCG64", "PCG64DXSM")  # the bit generators whose state is (state, inc) of 128 bits


class RngState(NamedTuple):
    """A generator's state: its bit generator's name, its 128-bit state and increment, and
    its buffered 32-bit draw (a named tuple: a snapshot builds one each time)."""

    bit_generator: str
    state: int
    inc: int
    has_uint32: int
    uinteger: int

    @classmethod
    def of(cls, rng: np.random.Generator) -> RngState:
        """The state of ``rng``.

        Raises:
            TypeError: a bit generator other than PCG64 and PCG64DXSM.
        """
        state = rng.bit_generator.state
        kind = state["bit_generator"]
        if kind not in _KINDS:
            raise TypeError(f"snapshots keep PCG64 generators' states only, got a {kind}")
        inner = state["state"]
        return cls(kind, inner["state"], inner["inc"], state["has_uint32"], state["uinteger"])

    @property
    def words(self) -> np.ndarray:
        """``(6,)`` uint64: the state's high and low halves, the increment's, whether a
        32-bit draw is buffered, and that draw."""
        s, inc = self.state, self.inc
        return np.array(
            (s >> 64, s & _MASK, inc >> 64, inc & _MASK, self.has_uint32, self.uinteger),
            dtype=np.uint64,
        )

    @classmethod
    def from_words(cls, bit_generator: str, words: np.ndarray) -> RngState:
        """The state :attr:`words` gave.

        Raises:
            ValueError: not 6 uint64 words, or an unknown bit generator.
        """
        if bit_generator not in _KINDS:
            raise ValueError(f"RNG state of an unknown bit generator {bit_generator!r}")
        if words.dtype != np.uint64 or words.shape != (6,):
            raise ValueError(f"RNG state words must be 6 uint64, got {words.dtype} {words.shape}")
        hi, lo, inc_hi, inc_lo, has, value = (int(w) for w in words)
        return cls(bit_generator, (hi << 64) | lo, (inc_hi << 64) | inc_lo, has, value)

    def put(self, rng: np.random.Generator) -> None:
        """Give ``rng`` this state (its bit generator of the same kind).

        Raises:
            ValueError: another kind of bit generator.
        """
        kind = type(rng.bit_generator).__name__
        if kind != self.bit_generator:
            raise ValueError(f"an RNG state of a {self.bit_generator} given to a {kind}")
        rng.bit_generator.state = {
            "bit_generator": kind,
            "state": {"state": self.state, "inc": self.inc},
            "has_uint32": self.has_uint32,
            "uinteger": self.uinteger,
        }
