"""FuzzConfig validates its fields up front: params as a mapping or (name, value) pairs, seeds
>= 0, integers that are integers; and it round-trips through to_dict/from_dict and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim.errors import ConfigError, PmsimError


@pytest.mark.parametrize("params", [{"slots": 8, "per_tx": 1}, (("slots", 8), ("per_tx", 1)),
                                    [["slots", 8], ["per_tx", 1]]])
def test_params_forms_normalise_to_pairs(params: Any) -> None:
    cfg = FuzzConfig(params=params)
    assert cfg.params == (("slots", 8), ("per_tx", 1))
    assert FuzzConfig.from_dict(cfg.to_dict()) == cfg
    assert FuzzConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


@pytest.mark.parametrize(("params", "says"), [
    ("slots=8", "mapping"),
    (8, "mapping"),
    (("slots", 8), "not a (name, value) pair"),
    ([("slots", 8, 1)], "not a (name, value) pair"),
    ({1: 8}, "not a non-empty string"),
    ([("slots", 8), ("slots", 9)], "given twice"),
])
def test_bad_params_say_the_expected_form(params: Any, says: str) -> None:
    with pytest.raises(ConfigError, match="FuzzConfig.params") as info:
        FuzzConfig(params=params)
    assert says in str(info.value)


def test_dict_params_fuzz_save_and_replay(tmp_path: Path) -> None:
    rep = fuzz(FuzzConfig(runtime="undo:U1", params={"slots": 8}, txs=3, stop_at_first=True,
                          depth=1))
    assert not rep.ok and rep.config.params == (("slots", 8),)
    paths = crashfuzz.save_findings(rep, tmp_path)
    assert json.loads(Path(paths[0]).read_text())["config"]["params"] == [["slots", 8]]
    assert crashfuzz.replay(paths[0], verbose=False) is not None


@pytest.mark.parametrize(("field", "value"), [
    ("seed", -1), ("seed", 1.0), ("seed", True), ("txs", 2.0), ("txs", True), ("threads", "2"),
    ("budget", 0), ("idempotence", -1), ("idempotence", False), ("new_tx", -1),
    ("max_failures", 1.5), ("depth_runs", None),
])
def test_integers_must_be_integers_in_range(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"FuzzConfig.{field} must be an integer >= "):
        FuzzConfig(**{field: value})


def test_numpy_integers_are_accepted_as_ints() -> None:
    import numpy as np

    cfg = FuzzConfig(seed=np.int64(5), txs=np.int32(3))
    assert type(cfg.seed) is int and type(cfg.txs) is int and cfg.seed == 5


@pytest.mark.parametrize("field", ["reduce", "stop_at_first", "new_tx_every_image"])
def test_flags_must_be_booleans(field: str) -> None:
    with pytest.raises(ConfigError, match=f"FuzzConfig.{field} must be True or False"):
        FuzzConfig(**{field: 1})


def test_negative_seed_is_a_config_error_not_a_numpy_one() -> None:
    with pytest.raises(ConfigError, match=r"FuzzConfig.seed must be an integer >= 0, got -1"):
        fuzz(FuzzConfig(), seed=-1)
    assert issubclass(ConfigError, PmsimError)
