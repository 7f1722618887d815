"""Loading untrusted recorded episodes: every malformed input is one EpisodeDataError naming
the file, reads are bounded, and nothing is ever unpickled."""

from __future__ import annotations

import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from runner_toy_envs import StatefulRandomAgent, ToyEnv

from grid_vec._untrusted import UntrustedFileError, json_depth
from grid_vec.chronics.csv_table import FolderFormatError
from grid_vec.runner import EpisodeData, EpisodeDataError, Runner, load_run
from grid_vec.runner.bounded_io import MAX_JSON_DEPTH, MAX_META_BYTES, MAX_NPZ_MEMBERS

UNPICKLED: list[str] = []


def trip() -> str:
    UNPICKLED.append("tripwire")
    return "tripped"


class Tripwire:
    """Records that it was unpickled: a loader that unpickles would run ``trip``."""

    def __reduce__(self):
        return trip, ()


@pytest.fixture
def episode(tmp_path) -> Path:
    env = SyncVectorEnv([ToyEnv], autoreset_mode=AutoresetMode.DISABLED)
    Runner(env, StatefulRandomAgent(3), seed=5).run(1, path_save=tmp_path)
    env.close()
    return tmp_path / "episode_00000"


def arrays_of(episode: Path) -> dict[str, np.ndarray]:
    with np.load(episode / "arrays.npz") as npz:
        return {name: npz[name] for name in npz.files}


def write_npz(path: Path, arrays: dict[str, np.ndarray], **zip_kwargs) -> None:
    with zipfile.ZipFile(path, "w", **zip_kwargs) as zf:
        for name, array in arrays.items():
            with zf.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, array, allow_pickle=True)


def edit_meta(episode: Path, edit) -> None:
    meta = json.loads((episode / "meta.json").read_text())
    edit(meta)
    (episode / "meta.json").write_text(json.dumps(meta))


def truncate_npz(episode):
    blob = (episode / "arrays.npz").read_bytes()
    (episode / "arrays.npz").write_bytes(blob[: len(blob) // 2])


def shorter_rewards(episode):
    arrays = arrays_of(episode)
    arrays["rewards"] = arrays["rewards"][:-1]
    write_npz(episode / "arrays.npz", arrays)


def drop_an_array(episode):
    arrays = arrays_of(episode)
    del arrays["truncated"]
    write_npz(episode / "arrays.npz", arrays)


def meta_lies_about_steps(episode):
    def edit(meta):
        meta["result"]["steps"] += 1

    edit_meta(episode, edit)


def huge_header_shape(episode):
    arrays = arrays_of(episode)
    with zipfile.ZipFile(episode / "arrays.npz", "w") as zf:
        for name, array in arrays.items():
            with zf.open(f"{name}.npy", "w") as member:
                if name == "rewards":  # claims 8 TB, holds 8 bytes
                    header = {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
                    np.lib.format.write_array_header_1_0(member, header)
                    member.write(b"\0" * 8)
                else:
                    np.lib.format.write_array(member, array)


def too_many_members(episode):
    arrays = arrays_of(episode)
    arrays.update({f"info.extra{i}": np.zeros(1) for i in range(MAX_NPZ_MEMBERS)})
    write_npz(episode / "arrays.npz", arrays)


def bzip2_member(episode):
    write_npz(episode / "arrays.npz", arrays_of(episode), compression=zipfile.ZIP_BZIP2)


def meta_too_large(episode):
    with (episode / "meta.json").open("r+b") as file:
        file.truncate(MAX_META_BYTES + 1)  # sparse: cheap to write, but too large to read


def meta_too_deep(episode):
    depth = 100_000  # deeper than the parser's recursion limit
    (episode / "meta.json").write_text('{"format": "grid_vec.episode/1", "x": ' + "[" * depth)


def meta_not_utf8(episode):
    (episode / "meta.json").write_bytes(b'{"format": "grid_vec.episode/1", "x": "\xff\xfe"}')


def meta_wrong_type(episode):
    def edit(meta):
        meta["result"]["steps"] = "ten"

    edit_meta(episode, edit)


def meta_arrays_malformed(episode):
    def edit(meta):
        meta["arrays"]["rewards"] = {"shape": 3}

    edit_meta(episode, edit)


def meta_is_a_list(episode):
    (episode / "meta.json").write_text("[1, 2, 3]")


def meta_missing(episode):
    (episode / "meta.json").unlink()


def npz_missing(episode):
    (episode / "arrays.npz").unlink()


def npz_is_a_directory(episode):
    (episode / "arrays.npz").unlink()
    (episode / "arrays.npz").mkdir()


def meta_is_a_fifo(episode):
    (episode / "meta.json").unlink()
    os.mkfifo(episode / "meta.json")  # reading it would block forever


MALFORMED = [
    (truncate_npz, "arrays.npz", "cannot read episode arrays"),
    (shorter_rewards, "arrays.npz", "'rewards' is <f8\\[\\d+\\], meta.json lists"),
    (drop_an_array, "arrays.npz", r"arrays differ from meta.json \(missing \['truncated'\]"),
    (meta_lies_about_steps, "arrays.npz", r"has \d+ rows, the result's \d+ steps need"),
    (huge_header_shape, "arrays.npz", r"header shape \(1000000000000,\) does not fit"),
    (too_many_members, "arrays.npz", f"members \\(limit {MAX_NPZ_MEMBERS}\\)"),
    (bzip2_member, "arrays.npz", "compression method 12"),
    (npz_missing, "arrays.npz", "episode arrays is missing"),
    (npz_is_a_directory, "arrays.npz", "episode arrays is not a regular file"),
    (meta_too_large, "meta.json", f"larger than the {MAX_META_BYTES}-byte limit"),
    (meta_too_deep, "meta.json", f"nests 100001 levels deep \\(limit {MAX_JSON_DEPTH}\\)"),
    (meta_not_utf8, "meta.json", "is not UTF-8"),
    (meta_wrong_type, "meta.json", "result.steps must be int, got str"),
    (meta_arrays_malformed, "meta.json", "'arrays' must map names to"),
    (meta_is_a_list, "meta.json", "not a grid_vec episode metadata file"),
    (meta_missing, "meta.json", "episode metadata is missing"),
    (meta_is_a_fifo, "meta.json", "episode metadata is not a regular file"),
]


@pytest.mark.parametrize(
    ("damage", "file", "message"), MALFORMED, ids=[d.__name__ for d, _, _ in MALFORMED]
)
def test_each_malformed_episode_raises_one_error_naming_the_file(episode, damage, file, message):
    assert EpisodeData.load(episode).result.episode == 0  # loads before the damage
    damage(episode)
    with pytest.raises(EpisodeDataError, match=message) as caught:
        EpisodeData.load(episode)
    assert str(caught.value).startswith(f"{episode / file}: ")
    assert len(str(caught.value)) < 400 and "\n" not in str(caught.value)


def test_object_arrays_are_refused_without_unpickling(episode):
    arrays = arrays_of(episode)
    arrays["info.payload"] = np.array([Tripwire()], dtype=object)
    write_npz(episode / "arrays.npz", arrays)
    pickle.loads(pickle.dumps(Tripwire()))  # the tripwire works when unpickled
    assert UNPICKLED == ["tripwire"]
    with pytest.raises(EpisodeDataError, match="holds Python objects"):
        EpisodeData.load(episode)
    with pytest.raises(EpisodeDataError, match="holds Python objects"):
        load_run(episode.parent)
    assert UNPICKLED == ["tripwire"]


def test_json_depth_ignores_brackets_inside_strings():
    assert json_depth(b'{"a": "[[[{{{", "b": [1, [2]]}') == 3
    assert json_depth(b'{"a": "\\"[[["}') == 1
    assert json_depth(b"3") == 0


def test_load_run_refuses_a_file_and_lists_only_whole_episodes(episode):
    with pytest.raises(EpisodeDataError, match="not a directory"):
        load_run(episode / "meta.json")
    (episode.parent / ".episode_00001.tmp-12").mkdir()  # an interrupted write
    (episode.parent / "episode_00002").write_text("")  # not a directory: not an episode
    assert [e.result.episode for e in load_run(episode.parent)] == [0]


def test_both_untrusted_file_errors_share_one_base_type():
    # one except clause catches a bad dataset folder and a bad recorded run alike
    assert issubclass(EpisodeDataError, UntrustedFileError)
    assert issubclass(FolderFormatError, UntrustedFileError)
    assert issubclass(UntrustedFileError, ValueError)
