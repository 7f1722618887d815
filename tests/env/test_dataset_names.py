"""``make(NAME)`` for a grid2op dataset's name, as a grid2op user writes it: found under
``$GRID_VEC_DATA_DIR``, ``~/data_grid2op`` or grid2op's bundled samples (with a warning), and
a name found nowhere says where it was looked for and how to get it."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from env_helpers import grid2op_sample

import grid_vec
from grid_vec.env.datasets import DatasetNotFoundError, find_dataset

SANDBOX = "l2rpn_case14_sandbox"


@pytest.fixture
def no_user_datasets(tmp_path, monkeypatch):
    """A home without ``~/data_grid2op`` and no ``$GRID_VEC_DATA_DIR``."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GRID_VEC_DATA_DIR", raising=False)
    return tmp_path


def _first_observation(env) -> np.ndarray:
    obs, _ = env.reset(seed=0, options={"scenario_id": 0})
    return obs


def test_make_of_a_dataset_name_plays_grid2ops_bundled_sample_with_a_warning(no_user_datasets):
    sample = grid2op_sample(SANDBOX)
    with pytest.warns(UserWarning, match=r"sample grid2op's package ships .*test=True"):
        by_name = grid_vec.make(SANDBOX)
    by_path = grid_vec.make(sample)
    assert by_name.unwrapped.model.n_sub == 14
    np.testing.assert_array_equal(_first_observation(by_name), _first_observation(by_path))


def test_make_of_a_dataset_name_prefers_the_data_dir_variable_and_does_not_warn(
    no_user_datasets, monkeypatch
):
    sample = grid2op_sample(SANDBOX)
    copy = shutil.copytree(sample, no_user_datasets / "datasets" / SANDBOX)
    monkeypatch.setenv("GRID_VEC_DATA_DIR", str(copy.parent))
    assert find_dataset(SANDBOX, samples=True) == copy
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*sample grid2op's package ships")
        env = grid_vec.make(SANDBOX)
    assert env.spec.kwargs["id_or_path"] == SANDBOX  # recordings name the dataset as given


def test_a_dataset_name_found_nowhere_says_where_it_looked_and_how_to_get_it(no_user_datasets):
    with pytest.raises(DatasetNotFoundError) as info:
        grid_vec.make("l2rpn_no_such_dataset")
    message = str(info.value)
    assert str(no_user_datasets / "home" / "data_grid2op" / "l2rpn_no_such_dataset") in message
    assert "grid2op.make('l2rpn_no_such_dataset')" in message
    assert "$GRID_VEC_DATA_DIR" in message


def test_a_path_that_is_no_folder_lists_the_known_ids(no_user_datasets):
    with pytest.raises(ValueError, match=r"grid_vec/Case14Topology-v0.*'no/such/folder'"):
        grid_vec.make("no/such/folder")


def test_the_not_found_message_names_the_way_the_caller_gives_a_folder(no_user_datasets):
    with pytest.raises(DatasetNotFoundError) as info:
        find_dataset("l2rpn_no_such_dataset")
    assert "data_dir=FOLDER" in str(info.value)
    assert "--data-dir FOLDER" in info.value.message("--data-dir FOLDER")
