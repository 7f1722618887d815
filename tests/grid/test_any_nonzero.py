"""The core's compiled ``any_true`` (``newton_kernel.any_nonzero``) answers as numpy's
``count_nonzero`` does, for every dtype the core passes it, in any shape and strides."""

from __future__ import annotations

import numpy as np
import pytest

from grid_vec.core.state import any_true


@pytest.mark.parametrize(
    "dtype", [np.bool_, np.int8, np.int32, np.int64, np.float32, np.float64, np.complex128]
)
def test_any_true_agrees_with_count_nonzero_on_views_of_every_dtype(dtype) -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = (rng.random((6, 9)) < 0.04).astype(dtype)
        if np.issubdtype(dtype, np.floating):
            x[rng.random(x.shape) < 0.3] = -0.0  # zero for numpy, though its bytes are not
        for view in (x, x.T, x[:, ::3], x[1:4, 2], x[::-1], x[:0]):
            assert any_true(view) == (np.count_nonzero(view) > 0)


def test_any_true_counts_nan_and_scalars_as_numpy_does() -> None:
    assert any_true(np.array([0.0, np.nan]))
    assert not any_true(np.float64(-0.0))
    assert any_true(np.bool_(True))
    assert not any_true(np.zeros((0, 3)))


def test_any_true_refuses_an_item_it_cannot_read() -> None:
    with pytest.raises(TypeError, match="unsupported item format"):
        any_true(np.zeros(3, dtype=np.float16))
