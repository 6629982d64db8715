"""rackclock as a wheel: built from the checkout, it holds every data file the packages open at
run time and no other top-level package, and it installs into a fresh virtual environment where
`rackclock run`, `report` and `compare` work outside the checkout."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bench", "drivers", "experiments")
NOT_SOURCE = (".venv", ".git", "results", "build", "dist", "__pycache__", "*.egg-info",
              ".pytest_cache", "notebooks")


def data_files() -> list[str]:
    """Every file in the packages that is not Python source: what the code opens at run time
    (compare_tolerances.toml, the default rack, the register maps)."""
    out = []
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*"):
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts:
                out.append(p.relative_to(ROOT).as_posix())
    return sorted(out)


def test_package_data_globs_match_files():
    """No glob in pyproject's package-data that matches nothing (it would hide a missing file)."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for pkg, globs in cfg["package-data"].items():
        for g in globs:
            assert glob.glob(str(ROOT / pkg.replace(".", "/") / g)), \
                f"package-data {pkg}: {g} matches no file"
    assert data_files(), "no data files found: the check below would be empty"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the checkout (the build leaves nothing in the checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w",
                        str(tmp / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    # a data folder that is not a package made setuptools print a 40-line warning (issue 30)
    assert "is absent from the `packages` configuration" not in p.stdout + p.stderr
    [whl] = (tmp / "dist").glob("rackclock-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_holds_the_packages_and_their_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    assert top - {n for n in top if n.endswith(".dist-info")} == set(PACKAGES), top
    for f in data_files():
        assert f in names, f"{f} is opened at run time but not in the wheel"
    assert "bench/compare/tolerances.toml" in names
    for pkg in PACKAGES:                                  # every module of the checkout
        for p in (ROOT / pkg).rglob("*.py"):
            assert p.relative_to(ROOT).as_posix() in names, p


def fresh_venv(venv: Path, wheel: Path) -> None:
    """A new venv with the wheel installed. Its dependencies: by default those of the environment
    running the tests, seen through a path file (like --system-site-packages: its .pth files,
    among them the checkout's editable install, are not run), checked with `pip check`; the venv
    has no pip of its own then (this environment's pip installs into it with --python, which
    saves ensurepip's seconds); with RACKCLOCK_WHEEL_FULL=1 a full install of them with the
    venv's own pip (from pip's cache or the index, minutes)."""
    full = os.environ.get("RACKCLOCK_WHEEL_FULL") == "1"
    subprocess.run([sys.executable, "-m", "venv", *([] if full else ["--without-pip"]), str(venv)],
                   check=True, timeout=300)
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip"] if full else [sys.executable, "-m", "pip", "--python", str(py)]
    if not full:
        import sysconfig
        (Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True)
              .stdout.strip()) / "rackclock-test-deps.pth").write_text(
            sysconfig.get_paths()["purelib"] + "\n")
    p = subprocess.run([*pip, "install", "-q", *([] if full else ["--no-deps"]), str(wheel)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([*pip, "check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(wheel, tmp_path):
    """A fresh venv, then run, report and compare from a folder that is not the checkout:
    nothing may come from the source tree."""
    venv = tmp_path / "venv"
    fresh_venv(venv, wheel)
    py, exe = venv / "bin" / "python", venv / "bin" / "rackclock"
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"

    def rackclock(*args, timeout=600, may_fail=False):
        r = subprocess.run([str(exe), *args], cwd=work, env=env, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0 or (may_fail and r.returncode == 1), \
            f"rackclock {' '.join(args)}:\n{r.stdout}\n{r.stderr}"
        return r

    def starved(r) -> bool:
        """A device left without one read in 10 s on a loaded host fails the run (exit 1), not
        the wheel: allowed where that is the only thing the run says went wrong."""
        lines = r.stderr.strip().splitlines()
        return bool(lines) and all(": no usable read (" in line for line in lines)

    where = subprocess.run([str(py), "-c", "import bench, drivers, experiments; print("
                            "bench.__file__, drivers.__file__, experiments.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    assert str(ROOT) not in where.stdout and str(venv) in where.stdout, where.stdout
    # a 10 s run of the default rack may end UNDECIDED (exit 3): the wheel is on trial, not it
    ran = rackclock("run", "--duration", "10", "--quiet", "--out", str(work / "runs"),
                    "--allow-undecided", may_fail=True)
    assert ran.returncode == 0 or starved(ran), ran.stdout + ran.stderr
    [run] = [p for p in (work / "runs").iterdir() if p.is_dir()]
    assert (run / "manifest.json").exists() and (run / "summary.json").exists()
    # png only: the svg and pdf figures are matplotlib's backends, drawn from the same code
    # (test_report checks all three formats); the package's own files are what is tested here
    rep = rackclock("report", str(run), "--formats", "png")
    assert (run / "report.html").exists() and list((run / "plots").glob("*.png")), rep.stdout
    # a run against itself: reads the tolerances shipped in the wheel, finds no regression
    cmp = rackclock("compare", str(run), str(run), "--json", str(work / "cmp.json"),
                    "--allow-undecided", may_fail=ran.returncode == 1)
    assert (work / "cmp.json").exists() and cmp.stdout.strip()
