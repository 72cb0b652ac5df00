"""The shipped artefact: a reproducible, stdlib-only zipapp that runs on Python 3.9+.

Also the architecture's import rules (layering, lazy command imports), checked
statically with ``ast`` and dynamically with ``-X importtime`` / ``sys.modules``.
Each structural checker is first shown to catch a planted violation, so a
checker that silently stopped working would fail here too.
"""

import ast
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import zipfile
from typing import Dict, List, Set, Tuple

import pytest

import build_pyz
import toolscript
import toolscript.cli.frame
from conftest import DEFAULT_TIMEOUT, REPO_ROOT, find_python39, missing_prerequisite, run_pyz

PACKAGE_DIR = os.path.join(REPO_ROOT, "toolscript")
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SHEBANG = b"#!/usr/bin/env python3\n"


def package_sources() -> List[str]:
    """Every ``toolscript/**/*.py`` (no ``__pycache__``), sorted, absolute."""
    found = []
    for dirpath, dirnames, filenames in os.walk(PACKAGE_DIR):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        found += [os.path.join(dirpath, f) for f in filenames if f.endswith(".py")]
    return sorted(found)


def module_name(path: str) -> str:
    """``toolscript/mcp/client/stdio.py`` -> ``toolscript.mcp.client.stdio``; ``__init__.py`` -> the package."""
    rel = os.path.relpath(path, REPO_ROOT)[: -len(".py")]
    parts = rel.split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def parse(path: str) -> ast.AST:
    with open(path, "rb") as f:
        return ast.parse(f.read(), filename=path)


def minimal_env(home: str, path_prefix: str = "") -> Dict[str, str]:
    """Only PATH and HOME, as on a bare machine."""
    path = os.environ.get("PATH", os.defpath)
    return {"PATH": (path_prefix + os.pathsep + path) if path_prefix else path, "HOME": home}


# --- reproducible build ----------------------------------------------------------


def test_build_is_byte_for_byte_reproducible(tmp_path):
    first = build_pyz.build(str(tmp_path / "a" / "toolscript.pyz"))
    second = build_pyz.build(str(tmp_path / "b" / "toolscript.pyz"))
    with open(first, "rb") as a, open(second, "rb") as b:
        assert a.read() == b.read(), "two builds of the same tree differ"


def test_build_ignores_mtimes_permissions_and_pycache(tmp_path):
    """A copy of the tree with new mtimes, odd modes and stray files builds the same bytes."""
    copy_root = tmp_path / "copy"
    shutil.copytree(PACKAGE_DIR, str(copy_root / "toolscript"), ignore=shutil.ignore_patterns("__pycache__"))
    original = build_pyz.build(str(tmp_path / "original.pyz"))

    stamp = 2_000_000_000  # 2033: certainly not the checkout's mtimes
    for dirpath, _dirnames, filenames in os.walk(str(copy_root)):
        for filename in filenames:
            os.utime(os.path.join(dirpath, filename), (stamp, stamp))
    os.chmod(str(copy_root / "toolscript" / "cli" / "frame.py"), 0o755)
    # A __pycache__ holding a .py file is only kept out by skipping the directory itself.
    cache = copy_root / "toolscript" / "mcp" / "__pycache__"
    cache.mkdir()
    (cache / "stale.py").write_text("raise RuntimeError('stale')\n")
    (cache / "stdio.cpython-39.pyc").write_bytes(b"\0" * 16)
    (copy_root / "toolscript" / "notes.txt").write_text("editor dropping\n")
    (copy_root / "toolscript" / "cli.py~").write_text("backup\n")

    rebuilt = build_pyz.build(str(tmp_path / "rebuilt.pyz"), root=str(copy_root))
    with open(original, "rb") as a, open(rebuilt, "rb") as b:
        original_bytes, rebuilt_bytes = a.read(), b.read()
    if original_bytes != rebuilt_bytes:
        with zipfile.ZipFile(rebuilt) as z:
            names = z.namelist()
        pytest.fail(f"build of the touched copy differs from the original; its entries: {names}")


def test_archive_entries_sorted_fixed_time_no_pycache(pyz):
    with zipfile.ZipFile(pyz) as archive:
        infos = archive.infolist()
        names = [info.filename for info in infos]
        main_source = archive.read("__main__.py").decode("utf-8")
    assert names == sorted(names), "entries are not in sorted order"
    assert len(names) == len(set(names)), "duplicate entries"
    sources = {os.path.relpath(p, REPO_ROOT).replace(os.sep, "/") for p in package_sources()}
    expected = {"__main__.py"} | sources | {name + "c" for name in sources}
    hook_scripts = {f"toolscript/claude_code/hook_scripts/{event}.sh"
                    for event in ("session-start", "user-prompt-submit", "pre-tool-use", "post-tool-use", "stop", "session-end")}
    page = {f"toolscript/gateway/page/{name}" for name in ("index.html", "app.js", "app.css")}
    assert set(names) == expected | hook_scripts | page | {"toolscript/gateway/runtime.ts", "toolscript/search/data/embeddings.bin",
                                                           "toolscript/search/data/thesaurus.tsv"}
    for info in infos:
        assert info.date_time == FIXED_TIME, f"{info.filename} has timestamp {info.date_time}"
        assert "__pycache__" not in info.filename
        assert info.filename.endswith((".py", ".pyc") + build_pyz.PACKAGE_DATA), f"non-source entry {info.filename}"
        assert (info.external_attr >> 16) & 0o777 == 0o644, f"{info.filename} mode {oct(info.external_attr >> 16)}"
    assert "from toolscript.__main__ import main" in main_source and "main()" in main_source  # one entry point for -m and the zipapp


def test_the_embedding_table_is_stored_uncompressed_and_loads_from_the_archive(pyz):
    """The prompt and Stop hooks read the table: inflating its 3.8 MB (deflate saves ~16% of int4 vectors) cost each ~20 ms."""
    with zipfile.ZipFile(pyz) as archive:
        table = archive.getinfo("toolscript/search/data/embeddings.bin")
        modules = [info for info in archive.infolist() if info.filename.endswith((".py", ".pyc"))]
    assert table.compress_type == zipfile.ZIP_STORED
    assert modules and all(info.compress_type == zipfile.ZIP_DEFLATED for info in modules)
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from toolscript.search import vectors; "
             "vector = vectors.encode('take a screenshot of the page'); print(vectors.loads, len(vector), round(sum(x * x for x in vector), 3))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe, str(pyz)], capture_output=True, text=True, timeout=DEFAULT_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "256", "1.0"]


def test_modules_load_compiled_on_the_build_python_and_from_source_elsewhere(pyz, tmp_path):
    """Each module ships as an unchecked hash-based .pyc too: no compiling on every start."""
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import toolscript.cli.frame as m; "
        "print(m.main.__code__.co_filename)"
    )
    same = subprocess.run([sys.executable, "-I", "-S", "-c", probe, pyz], capture_output=True, text=True, timeout=60)
    assert same.returncode == 0 and same.stdout.strip() == "toolscript/cli/frame.py", same.stderr  # from the .pyc
    with zipfile.ZipFile(pyz) as archive:
        pyc = archive.read("toolscript/cli/frame.pyc")
    assert pyc[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(pyc[4:8], "little") == 1  # unchecked hash
    # Another interpreter (bad magic) falls back to the source: simulate it with a broken magic.
    broken = tmp_path / "other.pyz"
    with zipfile.ZipFile(pyz) as source, zipfile.ZipFile(broken, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            target.writestr(info, b"\0\0\0\0" + data[4:] if info.filename.endswith(".pyc") else data)
    other = subprocess.run([sys.executable, "-I", "-S", "-c", probe, str(broken)], capture_output=True, text=True, timeout=60)
    assert other.returncode == 0 and other.stdout.strip().endswith(os.path.join("other.pyz", "toolscript", "cli", "frame.py")), other.stderr


def test_shebang_and_executable_bit(pyz):
    with open(pyz, "rb") as f:
        assert f.read(len(SHEBANG)) == SHEBANG
    mode = os.stat(pyz).st_mode
    assert mode & 0o111, f"not executable: {stat.filemode(mode)}"


# --- the zipapp runs anywhere ------------------------------------------------------


def check_version(proc: "subprocess.CompletedProcess[str]") -> None:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"toolscript {toolscript.__version__}", (proc.stdout, proc.stderr)
    assert proc.stderr == ""


def check_help(proc: "subprocess.CompletedProcess[str]") -> None:
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name, (_module, summary) in toolscript.cli.frame.COMMANDS.items():
        assert any(line.split()[:1] == [name] and summary in line for line in lines), (
            f"command {name!r} ({summary!r}) not listed in --help:\n{proc.stdout}"
        )
    assert "examples:" in proc.stdout


@pytest.mark.parametrize("args, check", [(["--version"], check_version), (["--help"], check_help)], ids=["version", "help"])
def test_pyz_isolated_from_elsewhere_with_bare_env(pyz, tmp_path, empty_home, args, check):
    proc = run_pyz(pyz, *args, env=minimal_env(empty_home), cwd=str(tmp_path))
    check(proc)


@pytest.mark.parametrize("args, check", [(["--version"], check_version), (["--help"], check_help)], ids=["version", "help"])
def test_pyz_runs_as_an_executable(pyz, tmp_path, empty_home, args, check):
    """``./toolscript.pyz --version`` through the shebang (python3 on PATH: this interpreter's, if it has one)."""
    exe_dir = tmp_path / "bin"
    exe_dir.mkdir()
    exe = exe_dir / "toolscript.pyz"
    shutil.copy2(pyz, str(exe))  # copy2 keeps the mode bits the build set
    here = os.path.dirname(sys.executable)
    prefix = here if os.path.exists(os.path.join(here, "python3")) else ""
    proc = subprocess.run(
        ["./toolscript.pyz", *args],
        cwd=str(exe_dir),
        env=minimal_env(empty_home, prefix),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=DEFAULT_TIMEOUT,
    )
    check(proc)


# --- Python 3.9 --------------------------------------------------------------------


def test_pyz_on_python39(pyz, tmp_path, empty_home):
    python39 = find_python39()
    work = tmp_path / "work"
    work.mkdir()
    env = minimal_env(empty_home)
    check_version(run_pyz(pyz, "--version", python=python39, env=env, cwd=str(work)))
    check_help(run_pyz(pyz, "--help", python=python39, env=env, cwd=str(work)))
    proc = run_pyz(pyz, "config", "validate", python=python39, env=env, cwd=str(work))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 server" in proc.stdout


def test_pyz_servers_check_on_python39(pyz, tmp_path, empty_home):
    """The MCP client modules import and run on 3.9 (a server that exits is reported, not a crash)."""
    python39 = find_python39()
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"dies": {"command": python39, "args": ["-c", "import sys; sys.exit(4)"]}}}))
    proc = run_pyz(pyz, "--config", str(config), "servers", "check", "--json", python=python39, env=minimal_env(empty_home), cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reports = json.loads(proc.stdout)
    assert [r["name"] for r in reports] == ["dies"]
    assert reports[0]["ok"] is False
    assert "status 4" in reports[0]["error"]


def test_sources_compile_on_python39(tmp_path):
    python39 = find_python39()
    copy = tmp_path / "toolscript"
    shutil.copytree(PACKAGE_DIR, str(copy), ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [python39, "-m", "compileall", "-q", str(copy)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=DEFAULT_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stdout
    # ...and the check bites: 3.10 syntax does not compile there.
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / "m.py").write_text("match x:\n    case 1: pass\n")
    proc = subprocess.run(
        [python39, "-m", "compileall", "-q", str(newer)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=DEFAULT_TIMEOUT,
    )
    assert proc.returncode != 0, "python3.9 compileall accepted a match statement; the check above proves nothing"


# --- older Pythons ------------------------------------------------------------------

OLD_PYTHON_MESSAGE = "toolscript needs Python 3.9 or newer (this is {}): run it with python3.9 or newer\n"


def older_pythons() -> List[Tuple[str, str]]:
    """(path, version) of each interpreter older than 3.9 that really runs: pythonX.Y on PATH, pyenv's versions."""
    import glob

    from conftest import REAL_HOME

    candidates = [shutil.which(f"python{v}") or "" for v in ("3.8", "3.7", "3.6", "3.5", "2.7")]
    candidates += sorted(glob.glob(os.path.join(REAL_HOME, ".pyenv/versions/[23].*/bin/python")))
    found: Dict[str, str] = {}
    for candidate in filter(None, candidates):
        try:
            proc = subprocess.run([candidate, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        version = proc.stdout.strip()
        if proc.returncode == 0 and tuple(int(p) for p in version.split(".")[:2]) < (3, 9):
            found.setdefault(version, candidate)
    return sorted((path, version) for version, path in found.items())


def as_run_on(python: str, pyz: str, how: str, args: List[str], env: Dict[str, str], cwd: str,
              input: str = "") -> "subprocess.CompletedProcess[str]":
    """toolscript ARGS under ``python``: the zipapp, or ``-m toolscript`` from the checkout."""
    argv = [python, pyz] if how == "pyz" else [python, "-m", "toolscript"]
    env = env if how == "pyz" else dict(env, PYTHONPATH=REPO_ROOT)
    return subprocess.run(argv + args, env=env, cwd=cwd, input=input, capture_output=True, text=True, timeout=DEFAULT_TIMEOUT)


def test_an_older_python_is_told_which_python_toolscript_needs(pyz, tmp_path, empty_home):
    """Real interpreters older than 3.9 (pyenv's, or pythonX.Y on PATH): one line and exit 2; a hook stays silent, exit 0."""
    pythons = older_pythons()
    if not pythons:
        pytest.skip("no Python older than 3.9 here (pyenv or pythonX.Y on PATH); the simulated test below still runs")
    env = minimal_env(empty_home)
    for python, version in pythons:
        for how in ("pyz", "checkout"):
            told = as_run_on(python, pyz, how, ["config", "validate"], env, str(tmp_path))
            assert (told.returncode, told.stdout, told.stderr) == (2, "", OLD_PYTHON_MESSAGE.format(version)), (python, how)
            hook = as_run_on(python, pyz, how, ["hook", "user-prompt-submit"], env, str(tmp_path), input='{"prompt": "hi"}')
            assert (hook.returncode, hook.stdout, hook.stderr) == (0, "", ""), (python, how)


_AS_IF_OLDER = """
import runpy, sys
sys.version_info = (3, 6, 15, "final", 0)
how, sys.argv = sys.argv[1], sys.argv[2:]
if how == "pyz":
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    runpy.run_module("toolscript", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("how", ["pyz", "checkout"])
def test_the_version_check_comes_before_any_other_import(pyz, tmp_path, empty_home, how):
    """This interpreter made to report 3.6.15: the entry point says so before importing what 3.6 lacks."""
    env = dict(minimal_env(empty_home), PYTHONPATH=REPO_ROOT)
    for args, expected in ((["config", "validate"], (2, "", OLD_PYTHON_MESSAGE.format("3.6.15"))),
                           (["hook", "user-prompt-submit"], (0, "", "")), (["--version"], (2, "", OLD_PYTHON_MESSAGE.format("3.6.15")))):
        proc = subprocess.run([sys.executable, "-I" if how == "pyz" else "-S", "-c", _AS_IF_OLDER, how, pyz, *args], env=env,
                              cwd=str(tmp_path), input="{}", capture_output=True, text=True, timeout=DEFAULT_TIMEOUT)
        assert (proc.returncode, proc.stdout, proc.stderr) == expected, (args, proc.stdout, proc.stderr)


# --- vermin -------------------------------------------------------------------------


def vermin_command() -> List[str]:
    """argv prefix that runs vermin; skip (fail under REQUIRE_PEERS) when it is not installed."""
    if importlib.util.find_spec("vermin") is not None:
        # vermin 1.9 has no __main__, so ``-m vermin`` does not work; call its entry point.
        return [sys.executable, "-c", "import sys; from vermin import main; sys.argv[0] = 'vermin'; sys.exit(main())"]
    for candidate in (shutil.which("vermin"), os.path.join(REPO_ROOT, ".venv", "bin", "vermin")):
        if candidate and os.access(candidate, os.X_OK):
            return [candidate]
    missing_prerequisite("vermin is not installed; run 'make venv' and use .venv/bin/python (tests/requirements.txt)")
    raise AssertionError("unreachable")  # pragma: no cover


VERMIN_ARGS = ["-q", "-t=3.9-", "--violations", "--no-tips"]


def run_vermin(*targets: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        vermin_command() + VERMIN_ARGS + list(targets),
        cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=DEFAULT_TIMEOUT,
    )


def test_vermin_finds_nothing_newer_than_39():
    proc = run_vermin("toolscript")
    assert proc.returncode == 0, f"vermin found code needing Python > 3.9:\n{proc.stdout}"


def test_vermin_check_bites(tmp_path):
    bad = tmp_path / "newer.py"
    bad.write_text("match x:\n    case 1: pass\n")
    proc = run_vermin(str(bad))
    assert proc.returncode != 0, f"vermin accepted a match statement with -t=3.9-:\n{proc.stdout}"


# --- stdlib only --------------------------------------------------------------------


def _under(path: str, directory: str) -> bool:
    try:
        return os.path.commonpath([path, directory]) == directory
    except ValueError:
        return False


def is_stdlib_by_location(top: str) -> bool:
    """Python 3.9 fallback: built in, frozen, or found under the stdlib dir (not in site-packages)."""
    if top in sys.builtin_module_names:
        return True
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if spec.origin in ("built-in", "frozen"):
        return True
    if not spec.origin or not os.path.isabs(spec.origin):
        return False  # namespace packages and other oddities are never stdlib
    origin = os.path.realpath(spec.origin)
    parts = origin.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    paths = sysconfig.get_paths()
    stdlib_dirs = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib") if paths.get(key)}
    return any(_under(origin, d) for d in stdlib_dirs)


def is_stdlib(name: str) -> bool:
    top = name.split(".")[0]
    names = getattr(sys, "stdlib_module_names", None)  # 3.10+
    return top in names if names is not None else is_stdlib_by_location(top)


def third_party_imports(tree: ast.AST, filename: str) -> List[str]:
    """``file:line: name`` for every absolute import that is neither stdlib nor ours."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue  # relative imports are ours by definition
        for name in names:
            top = name.split(".")[0]
            if top in ("toolscript", "__future__") or is_stdlib(name):
                continue
            found.append(f"{filename}:{node.lineno}: {name}")
    return found


def test_stdlib_checker_bites():
    snippet = "import json, os.path\nimport requests\nfrom yaml import safe_load\nfrom . import sibling\nfrom toolscript import log\n"
    found = third_party_imports(ast.parse(snippet), "<snippet>")
    assert found == ["<snippet>:2: requests", "<snippet>:3: yaml"]


def test_stdlib_location_fallback_tells_stdlib_from_site_packages():
    """The 3.9 branch of is_stdlib, exercised on every version."""
    assert is_stdlib_by_location("json")
    assert is_stdlib_by_location("sys")  # built in
    assert is_stdlib_by_location("concurrent")
    assert not is_stdlib_by_location("pytest")  # installed, but in site-packages
    assert not is_stdlib_by_location("surely_no_such_module_xyz")


def test_package_imports_only_the_stdlib():
    sources = package_sources()
    assert len(sources) >= 10, sources  # the walk really found the package
    offenders = []
    for path in sources:
        offenders += third_party_imports(parse(path), os.path.relpath(path, REPO_ROOT))
    assert offenders == [], "toolscript must be stdlib-only:\n" + "\n".join(offenders)


# --- lazy imports ------------------------------------------------------------------------


def imported_by_importtime(stderr: str) -> List[str]:
    """Module names from ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    names = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":  # the header line
                names.append(name)
    return names


# Runs main() like ``python -m toolscript`` and then lists the toolscript modules loaded.
MODULES_DRIVER = """\
import json, sys
from toolscript.cli.frame import main
try:
    rc = main(sys.argv[1:])
finally:
    loaded = sorted(m for m in sys.modules if m == "toolscript" or m.startswith("toolscript."))
    sys.stderr.write("\\nLOADED_MODULES=" + json.dumps(loaded) + "\\n")
sys.exit(rc)
"""


def loaded_modules(args: List[str], env: Dict[str, str], cwd: str) -> Tuple[List[str], "subprocess.CompletedProcess[str]"]:
    proc = subprocess.run(
        [sys.executable, "-c", MODULES_DRIVER, *args],
        env=dict(env, PYTHONPATH=REPO_ROOT), cwd=cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=DEFAULT_TIMEOUT,
    )
    marker = [line for line in proc.stderr.splitlines() if line.startswith("LOADED_MODULES=")]
    assert len(marker) == 1, proc.stderr
    return json.loads(marker[0].split("=", 1)[1]), proc


def test_importtime_config_validate_skips_mcp_and_servers(clean_env, workdir):
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolscript", "config", "validate"],
        env=dict(clean_env, PYTHONPATH=REPO_ROOT), cwd=workdir,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=DEFAULT_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = imported_by_importtime(proc.stderr)
    # cli imports command modules with importlib.import_module, which -X importtime does not
    # report; toolscript.config.load is imported (by a plain import) only by the config command.
    assert "toolscript.cli.frame" in names and "toolscript.config.load" in names, names
    assert not [n for n in names if n == "toolscript.mcp" or n.startswith("toolscript.mcp.")]
    assert "toolscript.cli.commands.servers" not in names


def test_config_validate_loads_only_its_command(clean_env, workdir):
    loaded, proc = loaded_modules(["config", "validate"], clean_env, workdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "toolscript.cli.commands.config" in loaded
    assert "toolscript.cli.commands.servers" not in loaded
    assert not [m for m in loaded if m == "toolscript.mcp" or m.startswith("toolscript.mcp.")], loaded


def test_servers_check_does_load_the_mcp_client(clean_env, workdir):
    """The positive control for the test above: the same probe does see a lazy import happen."""
    loaded, proc = loaded_modules(["servers", "check"], clean_env, workdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # run_check imports the probes lazily (the MCP client itself loads only when a server is configured).
    assert "toolscript.cli.commands.servers" in loaded and "toolscript.gateway.servers" in loaded
    assert "toolscript.cli.commands.config" not in loaded


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_command(clean_env, workdir, flag):
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolscript", flag],
        env=dict(clean_env, PYTHONPATH=REPO_ROOT), cwd=workdir,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=DEFAULT_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    names = imported_by_importtime(proc.stderr)
    assert "toolscript.cli.frame" in names, names
    assert "toolscript.config.load" not in names
    assert not [n for n in names if n.startswith("toolscript.cli.commands")]

    loaded, proc = loaded_modules([flag], clean_env, workdir)
    assert proc.returncode == 0, proc.stderr
    assert "toolscript.cli.frame" in loaded
    assert "toolscript.config.load" not in loaded, loaded
    assert not [m for m in loaded if m.startswith("toolscript.cli.commands") or m.startswith("toolscript.mcp")], loaded


# --- installed the way Python users install a command ---------------------------------------------


def _source_checkout(destination: str) -> str:
    """What a clone holds of the installable project: the package, pyproject.toml and README.md."""
    os.makedirs(destination)
    shutil.copytree(os.path.join(REPO_ROOT, "toolscript"), os.path.join(destination, "toolscript"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO_ROOT, name), destination)
    return destination


@pytest.mark.timeout(600)
@pytest.mark.parametrize("installer", ["pipx", "uv"])
def test_pipx_and_uv_install_a_command_that_behaves_as_the_zipapp(installer, tmp_path, pyz, clean_env):
    tool = os.path.join(os.path.dirname(sys.executable), installer)
    if not os.path.exists(tool):
        missing_prerequisite(f"{installer} is not installed in the test venv (pip install -r tests/requirements.txt)")
    source = _source_checkout(str(tmp_path / "src"))
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    work.mkdir()
    env = dict(clean_env, PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(bin_dir), UV_TOOL_DIR=str(tmp_path / "uv-tools"),
               UV_TOOL_BIN_DIR=str(bin_dir), UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_PYTHON=sys.executable,
               TOOLSCRIPT_STATE_DIR=str(tmp_path / "state"), TOOLSCRIPT_DATA_DIR=str(tmp_path / "data"))
    install = [tool, "install", source] if installer == "pipx" else [tool, "tool", "install", source]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stdout + done.stderr
    command = str(bin_dir / "toolscript")

    def both(*args):
        installed = subprocess.run([command, *args], env=env, cwd=str(work), capture_output=True, text=True, timeout=60)
        zipped = run_pyz(pyz, *args, env=env, cwd=str(work))
        return installed, zipped

    for args in (["--version"], ["--help"], ["exec", "--help"], ["exec", "print(6 * 7)"], ["config", "validate"],
                 ["--json", "hook", "user-prompt-submit"], ["no-such-command"]):
        installed, zipped = both(*args)
        assert (installed.returncode, installed.stdout, installed.stderr) == (zipped.returncode, zipped.stdout, zipped.stderr), args
    echoed = json.loads(subprocess.run([command, "--json", "tools", "invoke", "builtin__tools.echo", "--args", '{"a": 1}'],
                                       env=env, cwd=str(work), capture_output=True, text=True, timeout=60).stdout)
    assert echoed["ok"] is True and echoed["data"] == {"a": 1}
    # A gateway started by the installed command runs the installed package again (paths.toolscript_command).
    started = subprocess.run([command, "gateway", "start", "--detach", "--session", "pkg"], env=env, cwd=str(work),
                             capture_output=True, text=True, timeout=60)
    try:
        assert started.returncode == 0, started.stderr
        found = subprocess.run([command, "--json", "search", "list the files of a directory", "--session", "pkg"], env=env,
                               cwd=str(work), capture_output=True, text=True, timeout=60)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)[0]["id"] == "builtin__fs.list_dir", found.stdout
    finally:
        subprocess.run([command, "gateway", "stop", "--session", "pkg"], env=env, cwd=str(work), capture_output=True, timeout=60)
