"""``exec --workspace DIR``: the script runs in DIR and is told where it is, on every rung and in TypeScript.

A relative ``open("report.txt", "w")`` lands in the workspace and stays there
after exec ends; a relative read finds the workspace's files; the script reads
the path from ``os.getcwd()`` or ``TOOLSCRIPT_WORKSPACE`` (``Deno.cwd()`` or
``Deno.env.get("TOOLSCRIPT_WORKSPACE")`` in TypeScript).  HOME and TMPDIR stay
in the private temp dir.  Without ``--workspace`` nothing of that changes: the
script runs in its temp dir, which goes with it.
"""

import json
import os
import shlex

import pytest

from conftest import REPO_ROOT, Output, missing_prerequisite, run_cli
from toolscript.cli.commands import exec as exec_command
from toolscript.codemode import deno, process, sandbox
from toolscript.errors import UserError

BWRAP = os.path.join(REPO_ROOT, ".venv", "peers", "bwrap", "usr", "bin", "bwrap")

# Writes and reads relative paths, then says where it ran and what it was told.
SCRIPT = (
    "import json, os\n"
    "with open('report.txt', 'w') as f:\n"
    "    f.write('written by the script')\n"
    "os.mkdir('sub')\n"
    "with open('sub/nested.txt', 'w') as f:\n"
    "    f.write('nested')\n"
    "print(json.dumps({'input': open('in.txt').read(), 'cwd': os.getcwd(), 'listing': sorted(os.listdir('.')),\n"
    "                  'workspace': os.environ.get('TOOLSCRIPT_WORKSPACE'), 'home': os.environ['HOME'], 'tmp': os.environ['TMPDIR']}))\n"
)


def use_rung(monkeypatch, rung):
    """Force ``rung``; skip (or fail under TOOLSCRIPT_REQUIRE_PEERS=1) where this machine lacks it."""
    monkeypatch.setenv("TOOLSCRIPT_EXEC_LAYER", rung)
    probe = process.kernel_probe()
    if rung == "landlock" and not (probe["landlockAbi"] and probe["seccomp"]):
        missing_prerequisite("Landlock and seccomp are not available in this kernel")
    if rung == "bubblewrap":
        if os.access(BWRAP, os.X_OK) and not os.environ.get("TOOLSCRIPT_BWRAP"):
            monkeypatch.setenv("TOOLSCRIPT_BWRAP", BWRAP)
        if not sandbox.find_bwrap():
            missing_prerequisite("bubblewrap is not available (install it, run `make bwrap`, or set TOOLSCRIPT_BWRAP)")
    if rung == "namespaces" and sandbox.namespace_prefix(net=True) is None:
        missing_prerequisite("Linux namespaces are not available here (unshare failed or is missing)")


def sandbox_run(code, **kwargs):
    out, err = Output(), Output()
    result = sandbox.run(code, stdout=out, stderr=err, **kwargs)
    return result, out.text, err.text


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    (path / "in.txt").write_text("read from the workspace")
    return path


@pytest.mark.parametrize("rung", sandbox.LAYERS)
def test_the_script_runs_in_the_workspace_on_every_rung(monkeypatch, workspace, rung):
    use_rung(monkeypatch, rung)
    result, out, err = sandbox_run(SCRIPT, workspace=str(workspace))
    assert result.exit_code == 0, err
    seen = json.loads(out)
    real = os.path.realpath(str(workspace))
    assert seen["input"] == "read from the workspace"
    assert seen["cwd"] == seen["workspace"] == real
    assert seen["listing"] == ["in.txt", "report.txt", "sub"]
    # HOME and TMPDIR stay private: what a library caches there is not the user's.
    assert seen["home"] == seen["tmp"] and not seen["home"].startswith(real)
    # Written relative to the workspace, and still there after exec removed its temp dir.
    assert (workspace / "report.txt").read_text() == "written by the script"
    assert (workspace / "sub" / "nested.txt").read_text() == "nested"
    assert not os.path.exists(seen["home"])


@pytest.mark.parametrize("rung", sandbox.LAYERS)
def test_without_a_workspace_the_script_runs_in_its_temp_dir(monkeypatch, tmp_path, rung):
    use_rung(monkeypatch, rung)
    monkeypatch.chdir(tmp_path)
    code = ("import json, os\nopen('report.txt', 'w').write('gone')\n"
            "print(json.dumps({'cwd': os.getcwd(), 'home': os.environ['HOME'], 'workspace': os.environ.get('TOOLSCRIPT_WORKSPACE')}))\n")
    result, out, err = sandbox_run(code)
    assert result.exit_code == 0, err
    seen = json.loads(out)
    assert seen["cwd"] == seen["home"] and seen["workspace"] is None
    assert not (tmp_path / "report.txt").exists() and not os.path.exists(seen["cwd"])


def test_climbing_out_of_the_workspace_is_still_refused(workspace):
    (workspace.parent / "secret.txt").write_text("hunter2")
    result, out, err = sandbox_run("print(open('../secret.txt').read())", workspace=str(workspace))
    assert result.exit_code != 0 and "hunter2" not in out and "PermissionError" in err


def test_the_help_example_does_what_it_says(tmp_path, clean_env):
    """``toolscript exec --workspace ./out -f report.py``, as --help prints it, run from a project dir."""
    line = next(text for text in exec_command.DESCRIPTION.splitlines() if "--workspace ./out" in text)
    command, _, claim = line.strip().partition("      ")
    argv = shlex.split(command)
    assert argv[:2] == ["toolscript", "exec"] and "./out" in claim
    (tmp_path / "out").mkdir()
    (tmp_path / "report.py").write_text(
        "import os\n"
        "with open('report.txt', 'w') as f:\n"
        "    f.write('the report')\n"
        "print(os.environ['TOOLSCRIPT_WORKSPACE'])\n"
    )
    env = dict(clean_env, TMPDIR=str(tmp_path))
    proc = run_cli(*argv[1:], env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == os.path.realpath(str(tmp_path / "out")) + "\n"
    assert (tmp_path / "out" / "report.txt").read_text() == "the report"
    assert not (tmp_path / "report.txt").exists()


def test_exec_help_says_where_the_script_runs(clean_env):
    proc = run_cli("exec", "--help", env=clean_env)
    text = " ".join(proc.stdout.split())
    assert "working directory" in text and "TOOLSCRIPT_WORKSPACE" in text


# -- TypeScript ----------------------------------------------------------------------------------

TS_SCRIPT = """\
Deno.writeTextFileSync("report.txt", "written by the script");
Deno.mkdirSync("sub");
Deno.writeTextFileSync("sub/nested.txt", "nested");
const listing = [...Deno.readDirSync(".")].map((e) => e.name).sort();
console.log(JSON.stringify({
  input: Deno.readTextFileSync("in.txt"),
  cwd: Deno.cwd(),
  listing,
  workspace: Deno.env.get("TOOLSCRIPT_WORKSPACE") ?? null,
}));
"""


def run_ts(deno_path, code, **kwargs):
    out, err = Output(), Output()
    result = deno.run(code, stdout=out, stderr=err, deno=deno_path, **kwargs)
    return result, out.text, err.text


def test_typescript_runs_in_the_workspace_too(deno_path, workspace):
    result, out, err = run_ts(deno_path, TS_SCRIPT, workspace=str(workspace))
    assert result.exit_code == 0, err
    seen = json.loads(out)
    real = os.path.realpath(str(workspace))
    assert seen == {"input": "read from the workspace", "cwd": real, "listing": ["in.txt", "report.txt", "sub"], "workspace": real}
    assert (workspace / "report.txt").read_text() == "written by the script"
    assert (workspace / "sub" / "nested.txt").read_text() == "nested"


def test_typescript_reads_nothing_next_to_the_workspace(deno_path, workspace):
    (workspace.parent / "secret.txt").write_text("hunter2")
    result, out, err = run_ts(deno_path, 'console.log(Deno.readTextFileSync("../secret.txt"));', workspace=str(workspace))
    assert result.exit_code != 0 and "hunter2" not in out


def test_typescript_without_a_workspace_touches_no_file(deno_path, workspace):
    code = f'console.log(Deno.readTextFileSync({json.dumps(str(workspace / "in.txt"))}));'
    result, out, err = run_ts(deno_path, code)
    assert result.exit_code != 0 and "read from the workspace" not in out


def test_exec_lang_ts_takes_a_workspace(deno_path, tmp_path, clean_env):
    (tmp_path / "out").mkdir()
    env = dict(clean_env, TMPDIR=str(tmp_path), PATH=os.path.dirname(deno_path) + os.pathsep + clean_env.get("PATH", ""))
    proc = run_cli("exec", "--lang", "ts", "--workspace", "out", 'Deno.writeTextFileSync("r.txt", "ts"); console.log(Deno.cwd());',
                   env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == os.path.realpath(str(tmp_path / "out")) + "\n"
    assert (tmp_path / "out" / "r.txt").read_text() == "ts"


def test_typescript_refuses_a_workspace_whose_path_deno_would_split(deno_path, tmp_path):
    """Deno splits --allow-read lists at commas: a workspace "a,/etc" must not grant /etc."""
    odd = tmp_path / "a,"
    (odd / "etc").mkdir(parents=True)
    with pytest.raises(UserError, match="comma"):
        run_ts(deno_path, 'console.log(Deno.readTextFileSync("/etc/hostname"));', workspace=str(odd / "etc"))
