"""Packaging: the wheel carries its grammars, and an installed wheel (not only a checkout) finds them;
the wheel and the sdist carry the license text and pass ``twine check``.

Acceptance (DESIGN §2): in a fresh venv, ``pip install <the built wheel>`` then, from another
directory, ``tooldialect parse`` on a Hermes reply returns the call.

The slow tests build the wheel with ``pip wheel`` (pip fetches hatchling into an isolated build
environment) and install it with its dependencies from PyPI; they skip only when pip cannot
download hatchling because the network is unreachable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from support import pyproject

import tooldialect as td
from tooldialect import families

ROOT = Path(__file__).resolve().parent.parent
GRAMMARS = sorted(p.name for p in (ROOT / "grammars").glob("*.lark"))
TIMEOUT = 600

HERMES_REPLY = (
    "<think>The user wants the weather.</think>\n"
    "Checking now.\n"
    "<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}\n'
    "</tool_call>\n"
)
EXPECTED_CALL = {
    "name": "get_weather",
    "arguments": {"city": "Zürich", "unit": "celsius"},
    "id": None,
    "family": "hermes",
}

NETWORK_DOWN = (
    "Temporary failure in name resolution",
    "Name or service not known",
    "Failed to establish a new connection",
    "Network is unreachable",
    "NewConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "Connection refused",
    "ProxyError",
    "No matching distribution found for hatchling",
    "Could not find a version that satisfies the requirement hatchling",
)


# -- fast: the checkout -------------------------------------------------------------------


def _pyproject() -> dict[str, Any]:
    return pyproject()


def _reqs(items: list[str]) -> dict[str, Requirement]:
    out = {}
    for item in items:
        req = Requirement(item)
        out[req.name.lower()] = req
    return out


def test_checkout_finds_grammars():
    assert GRAMMARS, "no grammars/*.lark in the checkout"
    gdir = families.grammar_dir()
    assert gdir.is_dir()
    assert sorted(p.name for p in gdir.glob("*.lark")) == GRAMMARS
    # the checkout (editable install) reads the top-level grammars/, the only copy in the tree
    assert gdir.resolve() == (ROOT / "grammars").resolve()
    expected = sorted(Path(n).stem for n in GRAMMARS if not n.startswith("_"))
    assert sorted(families.names()) == expected
    assert "hermes" in families.names()
    result = td.parse(HERMES_REPLY)
    assert [(c.name, c.arguments, c.family) for c in result.calls] == [
        ("get_weather", {"city": "Zürich", "unit": "celsius"}, "hermes")
    ]


def test_pyproject_declares_dependencies_and_extras():
    project = _pyproject()["project"]

    python = SpecifierSet(project["requires-python"])
    assert python.contains("3.10.0") and python.contains("3.11.7") and python.contains("3.13.1")
    assert not python.contains("3.9.18")

    deps = _reqs(project["dependencies"])
    assert {"lark", "pydantic", "jsonschema"} <= set(deps), deps
    assert deps["lark"].specifier.contains("1.2.2")
    pydantic = deps["pydantic"].specifier
    assert pydantic.contains("2.5.0") and pydantic.contains("2.11.0"), "pydantic v2 must be allowed"
    assert not pydantic.contains("1.10.13"), "pydantic v1 must be excluded (the code uses the v2 API)"
    assert deps["jsonschema"].specifier.contains("4.23.0")
    for req in deps.values():
        assert req.marker is None and not req.extras, req

    extras = project["optional-dependencies"]
    assert {"pytest", "hypothesis", "interegular"} <= set(_reqs(extras["dev"])), extras["dev"]
    assert "atheris" in _reqs(extras["fuzz"]), extras["fuzz"]


def test_pyproject_declares_the_license_and_ships_its_text():
    data = _pyproject()
    project = data["project"]
    # PEP 639: an SPDX expression and the files that hold the text
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"], text[:200]
    assert "END OF TERMS AND CONDITIONS" in text
    # hatchling writes License-Expression and License-File from 1.27 (core metadata 2.4)
    (hatchling,) = [Requirement(r) for r in data["build-system"]["requires"] if Requirement(r).name == "hatchling"]
    assert not hatchling.specifier.contains("1.26.3") and hatchling.specifier.contains("1.27.0"), hatchling
    assert "LICENSE" in data["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    # make dist builds both and runs twine check, which reads metadata 2.4 from 6.1 on
    dev = _reqs(project["optional-dependencies"]["dev"])
    assert "build" in dev and dev["twine"].specifier.contains("6.1.0") and not dev["twine"].specifier.contains("6.0.1")


def test_the_spark_extra_pins_a_pandas_pyspark_supports():
    """pyspark 4 needs pyarrow 18 and pandas 2.2 or later, and warns that it does not yet
    support pandas 3: the spark extra (and dev, which installs pyspark) pins pandas below 3,
    and the pandas installed beside pyspark is one it takes without a warning."""
    extras = _pyproject()["project"]["optional-dependencies"]
    for name in ("spark", "dev"):
        reqs = _reqs(extras[name])
        assert "pandas" in reqs, f"the {name} extra does not pin pandas"
        pandas_pin = reqs["pandas"].specifier
        assert pandas_pin.contains("2.2.0") and pandas_pin.contains("2.3.3"), (name, pandas_pin)
        assert not pandas_pin.contains("3.0.0") and not pandas_pin.contains("2.1.4"), (name, pandas_pin)
        assert not reqs["pyarrow"].specifier.contains("17.0.0"), (name, reqs["pyarrow"])
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'tooldialect[spark]')")
    import warnings

    import pandas
    from pyspark.sql.pandas.utils import require_minimum_pandas_version

    assert _reqs(extras["spark"])["pandas"].specifier.contains(pandas.__version__), pandas.__version__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pyspark's FutureWarning about this pandas fails the test
        require_minimum_pandas_version()


def test_pyproject_packs_grammars_and_script():
    data = _pyproject()
    assert data["build-system"]["build-backend"] == "hatchling.build"
    assert data["project"]["scripts"]["tooldialect"] == "tooldialect.cli:main"
    wheel = data["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["force-include"] == {"grammars": "tooldialect/grammars"}
    assert (ROOT / "src" / "tooldialect" / "py.typed").is_file()


# -- slow: build, install, run ------------------------------------------------------------


def _run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_REQUIRE", "VIRTUAL_ENV"))}
    env.update(kw.pop("env", {}))
    return subprocess.run(argv, capture_output=True, text=True, encoding="utf-8", timeout=TIMEOUT, env=env, **kw)


def _network_down(output: str) -> bool:
    return any(s in output for s in NETWORK_DOWN)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    start = time.monotonic()
    done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(ROOT)], cwd=out)
    if done.returncode != 0:
        log = done.stdout + done.stderr
        if _network_down(log):
            pytest.skip("network unreachable: pip could not download hatchling to build the wheel\n" + log[-2000:])
        pytest.fail(f"pip wheel failed ({done.returncode}):\n{log[-4000:]}")
    wheels = list(out.glob("tooldialect-*.whl"))
    assert len(wheels) == 1, list(out.iterdir())
    print(f"\n[packaging] pip wheel took {time.monotonic() - start:.1f}s")
    return wheels[0]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    done = _run([sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(ROOT)], cwd=out)
    if done.returncode != 0:
        log = done.stdout + done.stderr
        if _network_down(log):
            pytest.skip("network unreachable: build could not download hatchling to build the sdist\n" + log[-2000:])
        pytest.fail(f"python -m build --sdist failed ({done.returncode}):\n{log[-4000:]}")
    sdists = list(out.glob("tooldialect-*.tar.gz"))
    assert len(sdists) == 1, list(out.iterdir())
    return sdists[0]


@pytest.mark.slow
def test_wheel_and_sdist_carry_the_license_text(wheel, sdist):
    license_text = (ROOT / "LICENSE").read_bytes()
    with zipfile.ZipFile(wheel) as zf:
        dist_info = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        assert zf.read(f"{dist_info}/licenses/LICENSE") == license_text
        wheel_metadata = zf.read(f"{dist_info}/METADATA").decode("utf-8")
    with tarfile.open(sdist) as tf:
        top = sdist.name.removesuffix(".tar.gz")
        member = tf.extractfile(f"{top}/LICENSE")
        assert member is not None and member.read() == license_text
        pkg_info = tf.extractfile(f"{top}/PKG-INFO")
        assert pkg_info is not None
        sdist_metadata = pkg_info.read().decode("utf-8")
    for metadata in (wheel_metadata, sdist_metadata):
        lines = metadata.splitlines()
        assert "License-Expression: Apache-2.0" in lines and "License-File: LICENSE" in lines


@pytest.mark.slow
def test_twine_check_passes_on_the_wheel_and_the_sdist(wheel, sdist):
    pytest.importorskip("twine", reason="twine is in the dev extra")
    done = _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], cwd=wheel.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


@pytest.mark.slow
def test_wheel_carries_grammars_and_py_typed(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for grammar in GRAMMARS:
            member = f"tooldialect/grammars/{grammar}"
            assert member in names, f"{member} missing from {wheel.name}"
            assert zf.read(member) == (ROOT / "grammars" / grammar).read_bytes()
        assert "tooldialect/grammars/hermes.lark" in names
        # the bundled grammars' parse tables, built ahead of time (make tables)
        member = "tooldialect/grammars/parse_tables.json"
        assert member in names and zf.read(member) == (ROOT / "grammars" / "parse_tables.json").read_bytes()
        assert "tooldialect/py.typed" in names
        assert "tooldialect/__init__.py" in names and "tooldialect/families/__init__.py" in names
        assert "tooldialect/cli.py" in names and "tooldialect/__main__.py" in names
        # the package is at the top of the wheel, not under src/
        assert not any(n.startswith(("src/", "grammars/")) for n in names), sorted(names)
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(f"{dist_info}/METADATA").decode("utf-8")
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode("utf-8")
    assert "Requires-Python: >=3.10" in metadata
    requires = {
        Requirement(line.split(":", 1)[1].strip()).name.lower()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    }
    assert {"lark", "pydantic", "jsonschema"} <= requires
    assert "tooldialect = tooldialect.cli:main" in entry_points


@pytest.mark.slow
def test_installed_wheel_parses_hermes_from_another_directory(wheel, tmp_path):
    start = time.monotonic()
    venv = tmp_path / "venv"
    done = _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    done = _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", str(wheel)], cwd=tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    installed = time.monotonic()

    # a working directory that is neither the checkout nor inside it
    work = tmp_path / "elsewhere"
    work.mkdir()
    assert ROOT not in work.resolve().parents
    (work / "reply.txt").write_text(HERMES_REPLY, encoding="utf-8")
    (work / "tools.json").write_text(
        json.dumps(
            [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
        ),
        encoding="utf-8",
    )

    done = _run([str(bindir / "tooldialect"), "parse", "reply.txt", "--tools", "tools.json"], cwd=work)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    result = json.loads(done.stdout)
    assert result["calls"] == [EXPECTED_CALL]
    assert result["reasoning"] == "The user wants the weather."
    assert result["text"] == "\nChecking now.\n\n"
    assert result["diagnostics"] == []

    done = _run([str(bindir / "tooldialect"), "families"], cwd=work)
    assert done.returncode == 0, done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines()[1:] if not line.startswith(" ")]
    assert sorted(rows) == sorted(Path(n).stem for n in GRAMMARS if not n.startswith("_"))

    probe = (
        "import json, sysconfig, tooldialect, tooldialect.families as f; "
        "print(json.dumps({'grammar_dir': str(f.grammar_dir().resolve()), "
        "'package': str(tooldialect.__file__), "
        "'purelib': str(sysconfig.get_paths()['purelib']), 'platlib': str(sysconfig.get_paths()['platlib'])}))"
    )
    done = _run([str(python), "-c", probe], cwd=work)
    assert done.returncode == 0, done.stderr
    where = json.loads(done.stdout)
    gdir = Path(where["grammar_dir"])
    site_dirs = {Path(where["purelib"]).resolve(), Path(where["platlib"]).resolve()}
    assert any(d in gdir.parents for d in site_dirs), (gdir, site_dirs)
    assert gdir == (Path(where["package"]).resolve().parent / "grammars")
    assert ROOT.resolve() not in gdir.parents and ROOT.resolve() not in Path(where["package"]).resolve().parents
    assert (gdir / "hermes.lark").is_file()
    # the installed package reads its shipped parse tables: no grammar is compiled, lark is not imported
    probe = f"import sys, tooldialect as td; td.parse({HERMES_REPLY!r}); print('lark' in sys.modules)"
    done = _run([str(python), "-c", probe], cwd=work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    print(
        f"\n[packaging] venv + pip install took {installed - start:.1f}s; "
        f"CLI checks took {time.monotonic() - installed:.1f}s"
    )
