"""Runtime.supported_domains is enforced where a runtime is built, so every entry point refuses
a runtime in a domain it does not support (exit 2, the reason and what to use instead), and
comparisons, sweeps, ablation and the kill matrix leave such cells out with a note."""

from __future__ import annotations

import pytest

from crashfuzz import FuzzConfig, fuzz
from crashfuzz.ablation import ablate
from crashfuzz.cli import main as crashfuzz_main
from crashfuzz.mutants import kill_matrix, kill_one
from pmsim import Machine, preset
from pmsim.cli import main as pmsim_main
from pmsim.errors import ConfigError, UnsupportedDomainError
from pmsim.experiments import measure, run_points
from pmsim.experiments.run import run_experiment, supported_points
from pmsim.experiments.unified import Unified
from pmsim.runtimes import PMSpec, StaticArray, create_runtime, fit_pm, get_mutant, get_runtime
from pmsim.runtimes.marathe.undo import UndoRuntime
from pmsim.runtimes.registry import RUNTIMES
from pmsim.workloads import Session

PMEM_WHY = "write pending queue"


class Pdom2Undo(UndoRuntime):
    """A user runtime declaring a single domain: the check is the base class's, not pmem's."""

    name = "pdom2-undo"
    supported_domains = ("pdom2",)


def _refused_pairs() -> list[tuple[str, str]]:
    get_runtime("undo")
    return [(n, d) for n, c in sorted(RUNTIMES.items()) for d in ("pdom0", "pdom1", "pdom2")
            if d not in c.supported_domains]


def test_some_runtimes_declare_fewer_domains() -> None:
    pairs = _refused_pairs()
    assert ("pmem", "pdom0") in pairs and ("proteus", "pdom0") in pairs
    assert ("atom", "pdom0") in pairs and ("pmem:S1", "pdom0") in pairs
    assert not [p for p in pairs if p[0] in ("undo", "redo", "cow", "pmem-pcommit")]


@pytest.mark.parametrize(("runtime", "domain"), _refused_pairs())
def test_every_runtime_refuses_to_be_built_in_an_unsupported_domain(runtime: str,
                                                                    domain: str) -> None:
    spec = PMSpec(statics=(StaticArray("a", 4, 2),))
    cls = get_runtime(runtime)
    cfg = preset("default").replace(cores=1, domain=domain)
    cfg = fit_pm(cfg, cls.plan(spec, 1).size, shrink=True)
    with pytest.raises(UnsupportedDomainError) as e:
        create_runtime(cls, Machine(cfg), spec)
    assert e.value.runtime == runtime and e.value.domain == domain
    msg = str(e.value)
    assert f"runtime {runtime!r}" in msg and domain in msg
    assert "It supports " + ", ".join(cls.supported_domains) in msg


def test_the_refusal_says_why_and_what_to_use() -> None:
    msg = get_runtime("pmem").domain_problem("pdom0")
    assert PMEM_WHY in msg and "pdom1 or pdom2" in msg and "'pmem-pcommit' in pdom0" in msg
    assert "'proteus-pcommit'" in get_runtime("proteus").domain_problem("pdom0")
    assert "'pmem-pcommit'" in get_runtime("atom").domain_problem("pdom0")
    assert get_runtime("pmem").domain_problem("pdom1") == ""
    assert get_runtime("undo").domain_problem("pdom0") == ""


def test_a_user_runtime_is_refused_too() -> None:
    with pytest.raises(UnsupportedDomainError,
                       match="'pdom2-undo' does not support persistence domain pdom1"):
        Session.create(Pdom2Undo, "array", preset("optane-adr"), txs=2)
    s = Session.create(Pdom2Undo, "array", preset("eadr"), txs=2)
    s.run(2)
    assert s.check()


# -- pmsim run -----------------------------------------------------------------------------------

def test_run_experiment_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UnsupportedDomainError, match="pmem-pcommit"):
        run_experiment("pmem", "array", "pdom0", txs=2)


def test_pmsim_run_exits_2_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert pmsim_main(["run", "--runtime", "pmem", "--preset", "pdom0", "--txs", "2"]) == 2
    out, err = capsys.readouterr()
    assert PMEM_WHY in err and "pmem-pcommit" in err and "Traceback" not in err
    assert not out


# -- crashfuzz -----------------------------------------------------------------------------------

def test_fuzz_refuses_before_any_run() -> None:
    with pytest.raises(UnsupportedDomainError, match="pmem-pcommit"):
        fuzz(FuzzConfig(runtime="pmem", workload="kv", domain="pdom0", txs=2))
    with pytest.raises(UnsupportedDomainError, match="pdom2-undo"):
        fuzz(FuzzConfig(workload="array", domain="pdom1", txs=2), runtime=Pdom2Undo)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_crashfuzz_run_exits_2(capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    rc = crashfuzz_main(["run", "--runtime", "pmem", "--domain", "pdom0", "--workload", "kv",
                         "--txs", "2", "--findings", "", "--jobs", jobs])
    out, err = capsys.readouterr()
    assert rc == 2, out + err
    assert PMEM_WHY in err and "pmem-pcommit" in err and "Traceback" not in err


# -- compare and sweeps --------------------------------------------------------------------------

def test_compare_leaves_unsupported_cells_out_with_a_note() -> None:
    u = Unified(runtimes=("undo", "pmem"), workloads=("array",), domains=("pdom0", "pdom1"),
                txs=2, warmup=0, fuzz=False, kills="off").resolved()
    assert {(p["runtime"], p["preset"]) for p in u.points()} == {
        ("undo", "pdom0"), ("undo", "optane-adr"), ("pmem", "optane-adr")}
    assert u.skipped() == ["not run in pdom0, which they do not support: pmem"]
    assert "not run in pdom0, which they do not support: pmem" in u.describe()


def test_compare_with_no_supported_cell_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UnsupportedDomainError, match="pmem-pcommit"):
        Unified(runtimes=("pmem", "proteus"), domains=("pdom0",)).resolved()
    rc = pmsim_main(["compare", "--runtimes", "pmem", "--domains", "pdom0", "--no-fuzz",
                     "--kills", "off"])
    _, err = capsys.readouterr()
    assert rc == 2 and PMEM_WHY in err and "Traceback" not in err


def test_a_sweep_skips_unsupported_points_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    pts = [{"runtime": r, "workload": "array", "preset": p, "txs": 2, "params": {"slots": 64}}
           for r in ("undo", "pmem") for p in ("pdom0", "optane-adr")]
    pts.append({"runtime": "pmem", "workload": "array", "preset": "optane-adr", "txs": 2,
                "machine": {"domain": "pdom0"}})
    keep, notes = supported_points(pts)
    assert [p["runtime"] + "/" + p["preset"] for p in keep] == [
        "undo/pdom0", "undo/optane-adr", "pmem/optane-adr"]
    assert len(notes) == 2 and notes[0].startswith("point 2 not run: runtime 'pmem'")
    rows = run_points(pts, measure, label="demo", executor="serial", progress=False)
    err = capsys.readouterr().err
    assert [(r["runtime"], r["domain"]) for r in rows] == [
        ("undo", "pdom0"), ("undo", "pdom1"), ("pmem", "pdom1")]
    assert "demo: point 2 not run" in err and "demo: point 4 not run" in err
    assert supported_points([{"runtime": "no-such-runtime", "domain": "pdom0"},
                             {"mutant": "pmem:S1", "domain": "pdom0"}])[1] == [
        "point 1 not run: " + get_runtime("pmem:S1").domain_problem("pdom0")]


# -- ablation and the kill matrix ----------------------------------------------------------------

def test_ablate_refuses_or_skips(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UnsupportedDomainError, match="pmem-pcommit"):
        ablate("pmem", ("pdom0",), steps=["pmem.flag.fence"])
    rc = crashfuzz_main(["ablate", "--runtime", "pmem", "--domain", "pdom0", "--step",
                         "pmem.flag.fence"])
    _, err = capsys.readouterr()
    assert rc == 2 and PMEM_WHY in err and "Traceback" not in err


def test_ablate_leaves_an_unsupported_domain_out_with_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    base = FuzzConfig(txs=3, idempotence=1, reduce=False, budget=1024, depth=1)
    cells = ablate("pmem", ("pdom0", "pdom1"), steps=["pmem.log.fence"], base=base)
    assert [(c.domain, c.verdict) for c in cells] == [("pdom1", "needed")]
    assert cells.skipped == ["not run in pdom0: " + get_runtime("pmem").domain_problem("pdom0")]


def test_kill_matrix_refuses_or_skips() -> None:
    with pytest.raises(UnsupportedDomainError, match="'pmem:S1'"):
        kill_matrix(["pmem:S1"], ["pdom0"])
    with pytest.raises(UnsupportedDomainError, match="pmem-pcommit"):
        kill_one(get_mutant("pmem:S1"), "pdom0", FuzzConfig(txs=4, reduce=False))
    rows = kill_matrix(["pmem:S1"], ["pdom0", "pdom1"],
                       FuzzConfig(txs=4, idempotence=1, reduce=False, budget=1024))
    assert [(r.domain, r.verdict, r.base) for r in rows] == [("pdom1", "yes", "passes")]
    assert rows.skipped == ["not run in pdom0, which their runtime does not support: pmem:S1 "
                            "(see supported_domains)"]


def test_crashfuzz_mutants_exits_2_when_nothing_is_supported(
        capsys: pytest.CaptureFixture[str]) -> None:
    rc = crashfuzz_main(["mutants", "--mutant", "atom:A1", "--domain", "pdom0"])
    _, err = capsys.readouterr()
    assert rc == 2 and "'atom:A1' does not support persistence domain pdom0" in err
    assert "Traceback" not in err


def test_unsupported_domain_is_a_config_error() -> None:
    assert issubclass(UnsupportedDomainError, ConfigError)
