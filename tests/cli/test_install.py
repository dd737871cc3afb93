"""astro installed as a command: the wheel, installed into a fresh virtual environment, runs
from another folder with its styles and the sample warehouse's SQL inside the package.

The wheel is built with `uv build`, its dependencies installed from uv's cache (offline) as
the lock file pins them, then the wheel itself; the sample is the session's build, copied
into the installed astro's cache folder under the name astro gives it, which it finds only
if it reads the same SQL from inside the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT


def _uv(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["uv", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` folder of a fresh virtual environment holding only the wheel and its dependencies."""
    if shutil.which("uv") is None:
        pytest.skip("uv is not installed")
    work = tmp_path_factory.mktemp("install")
    built = _uv("build", "--wheel", "--out-dir", str(work / "dist"), cwd=ROOT)
    assert built.returncode == 0, built.stderr
    wheel = next((work / "dist").glob("astro_tui-*.whl"))
    lock = work / "pylock.toml"
    exported = _uv(
        "export", "--frozen", "--no-dev", "--no-emit-project", "--format", "pylock.toml", "-o", str(lock),
        cwd=ROOT,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    venv = work / "venv"
    made = _uv("venv", "--python", sys.executable, str(venv), cwd=work)
    assert made.returncode == 0, made.stderr
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    deps = _uv("pip", "install", "--offline", "-r", str(lock), cwd=work, env=env)
    if deps.returncode != 0:
        pytest.skip(f"the dependencies are not in uv's cache: {deps.stderr.strip().splitlines()[0]}")
    own = _uv("pip", "install", "--offline", "--no-deps", str(wheel), cwd=work, env=env)
    assert own.returncode == 0, own.stderr
    return venv / "bin"


def _elsewhere(tmp_path: Path, sample_path: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "elsewhere"
    cache = tmp_path / "cache"
    folder.mkdir()
    cache.mkdir()
    shutil.copyfile(sample_path, cache / sample_path.name)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "ASTRO_CACHE_DIR": str(cache),
        "ASTRO_CONFIG_DIR": str(tmp_path / "config"),
        "ASTRO_STATE_DIR": str(tmp_path / "state"),
    }
    return folder, env


def test_the_wheel_installs_a_command_that_runs_anywhere(
    installed: Path, tmp_path: Path, sample_path: Path
) -> None:
    folder, env = _elsewhere(tmp_path, sample_path)
    astro = str(installed / "astro")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [astro, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
        )

    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("astro, version "), version
    counted = run("sql", "select count(*) AS n from sales.orders", "--format", "csv")
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.splitlines() == ["n", "120854"]
    assert "Building" not in counted.stderr  # the copied build was found: the same SQL, from the wheel
    listed = run("shell", "ls /")
    assert listed.returncode == 0 and listed.stdout.split() == ["marketing/", "platform/", "sales/"], listed
    (folder / "d.csv").write_text("a,b\n1,2\n")
    relative = run("sql", "select b from d", "d.csv", "--format", "csv")  # a path relative to where it runs
    assert relative.returncode == 0 and relative.stdout.splitlines() == ["b", "2"], relative.stderr


def test_the_installed_package_reads_its_own_files(
    installed: Path, tmp_path: Path, sample_path: Path
) -> None:
    folder, env = _elsewhere(tmp_path, sample_path)
    code = (
        "import astro_tui, pathlib\n"
        "from astro_tui.resources import resource_dir\n"
        "print(pathlib.Path(astro_tui.__file__).parent)\n"
        "print(resource_dir('styles') / 'app.tcss')\n"
        "print(resource_dir('warehouse') / 'questions.jsonl')\n"
        "print(astro_tui.sample_path(build=False))\n"
    )
    shown = subprocess.run(
        [str(installed / "python"), "-c", code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    package, styles, questions, sample = (Path(line) for line in shown.stdout.splitlines())
    assert package.is_relative_to(installed.parent) and not package.is_relative_to(ROOT)
    assert styles.is_file() and styles.is_relative_to(package)
    assert questions.is_file() and questions.is_relative_to(package)
    assert sample == Path(env["ASTRO_CACHE_DIR"]) / sample_path.name
