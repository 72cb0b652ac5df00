"""``toolscript exec --lang ts``: TypeScript under Deno, confined by Deno's permission flags.

Two parts:

* the runtime module a script gets with ``import { tools, ToolError } from
  "toolscript"`` is served by the gateway (``gateway/tsruntime.py``) at
  ``GET <gateway>/runtime/tools.ts``.  Each tool function takes ONE object of
  arguments: ``await tools.fixture.add({ a: 2, b: 3 })``.
* :func:`run` -- runs a script: ``deno run --quiet --no-prompt --no-check``
  in a fresh temp dir with a fresh ``DENO_DIR``, an import map that points
  ``toolscript`` at the gateway, an empty environment, and permissions for
  nothing but the gateway's ``host:port`` (``--allow-net`` and
  ``--allow-import``).  Without a gateway it gets no network permission and
  ``--no-remote``.  With a workspace it runs there, may read and write it
  (``--allow-read``/``--allow-write`` of that directory alone) and reads its
  path from ``Deno.cwd()`` or ``Deno.env.get("TOOLSCRIPT_WORKSPACE")`` (the one
  variable ``--allow-env`` names).  Output streaming, the output cap, the wall-clock timeout
  (exit 124), the exit status, the process-group kill and dying with
  ``exec`` are the Python runner's (:func:`toolscript.codemode.process.supervise`).
* where the kernel has Landlock and seccomp, Deno starts through the
  ``confine.py`` launcher (``python -I -S confine.py POLICY -- deno run ...``):
  it may read only the shared libraries, its own binary and the temp root,
  write its work dir, ``DENO_DIR`` and the workspace, execute nothing but itself, connect over
  TCP only to the gateway's port, and is killed by a kernel timer after the
  timeout; so a hole in Deno's permission checks is not a way out.  The mode
  then reads ``landlock(abi N)+seccomp+deno-permissions``.

Why the flags and steps are what they are:

* ``--no-check``: type-checking on a fresh cache costs about 1.2 s per run,
  and results typed ``unknown`` would make ``result.url`` fail it.  Types are
  for the model to read (``get-types --lang ts``); results here are ``any``.
* ``--no-npm`` and ``--no-config`` always, and ``--no-remote`` without a
  gateway: with no ``--allow-import`` flag Deno still imports from its default
  hosts (deno.land, jsr.io, esm.sh, ...), and ``npm:`` specifiers download
  from the npm registry whatever the permissions say -- both are ways out to
  the network the permission flags do not close.
* no local file can be imported: Deno checks ``--allow-read`` for dynamic
  imports only, so a static ``import t from "/etc/passwd" with { type:
  "text" }`` (or a JSON import of any config file) would read anything the
  user can read; the import map sends every ``file:`` URL but the script's
  own to a directory that does not exist (see :func:`import_map_for`).
* the gateway's token is replaced by ``<token>`` in the output: stack traces
  through the runtime module show its URL, which carries the token.
* a timeout, an output cap, streamed output, the script's own exit status,
  and the V8 heap capped like the Python runner's memory (1 GiB); the runtime
  module carries the gateway's names as one JSON string literal, so no tool
  name or description can change its code.

What the script can still do: call every tool and endpoint of the gateway,
read its own working directory's path (``Deno.cwd()`` needs no permission),
use CPU and memory up to the limits, and start workers (which inherit its
permissions).  Deno's permission checks are the first boundary (no
``--allow-run/ffi/sys`` is ever given, and ``--allow-read/write/env`` only
for the workspace and its variable), the kernel layer the second.
"""

import json
import os
import pathlib
import re
import shutil
import signal
import time
from typing import Any, BinaryIO, Optional, Sequence

from toolscript import log
from toolscript.codemode import confine, process
from toolscript.codemode.process import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, KILL_GRACE, ExecResult
from toolscript.errors import UserError

logger = log.get("codemode.deno")

MODE = "deno-permissions"
POLICY_NAME = "_toolscript_policy.json"
KERNEL_DEADLINE = 1.5  # seconds after the timeout: the kernel's kill timer, which holds when exec is gone
RUNTIME_PATH = "/runtime/tools.ts"  # under the gateway URL; the module strips it from import.meta.url
SOURCE = "exec-ts"  # the ``source`` of calls made from TypeScript, in the gateway's call records
NEEDS_DENO = "TypeScript needs Deno: install it (https://deno.com) or use Python"
HEAP_LIMIT_MIB = 1024  # V8 heap, like the Python runner's 1 GiB of address space
_NO_LOCAL_IMPORTS = "file:///toolscript-exec-cannot-import-local-files/"
_MIN_REDACTED = 16  # a shorter last URL segment is not taken for a token
_SCRIPT_SUFFIXES = (".ts", ".mts", ".tsx", ".js", ".mjs", ".jsx")


# -- running a script ----------------------------------------------------------------------------

# What "toolscript" is without a gateway: it links (an import of these names resolves), then throws.
_NO_GATEWAY_MODULE = """\
export const tools: any = undefined;
export class ToolError extends Error {}
export default tools;
throw new Error("toolscript: this script has no gateway, so `import ... from \\"toolscript\\"` cannot work; " +
  "start one with `toolscript gateway start` (toolscript exec finds it through TOOLSCRIPT_GATEWAY_URL or the session)");
"""


def find_deno() -> str:
    """The ``deno`` executable on PATH, or ``UserError``."""
    found = shutil.which("deno")
    if not found:
        raise UserError(NEEDS_DENO)
    return found


def _script_name(filename: str) -> str:
    """A safe file name for the script that keeps the user's name where it can (``<exec>`` -> ``exec.ts``)."""
    stem, suffix = os.path.splitext(os.path.basename(filename or ""))
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._-")[:64] or "exec"
    return stem + (suffix.lower() if suffix.lower() in _SCRIPT_SUFFIXES else ".ts")


def _authority(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _signal_message(signum: int, heap_mib: int) -> str:
    name = process.signal_name(signum)
    if signum in (getattr(signal, "SIGTRAP", -1), getattr(signal, "SIGABRT", -1), getattr(signal, "SIGILL", -1)):
        return f"toolscript: Deno crashed ({name}); V8 does this when a script runs out of its {heap_mib} MiB heap"
    if signum == getattr(signal, "SIGKILL", -1):
        return f"toolscript: Deno was killed ({name}), probably by the system's out-of-memory killer"
    return f"toolscript: Deno was killed by {name}"


def import_map_for(target: str, allowed: Sequence[str]) -> dict:
    """The import map: ``"toolscript"`` is ``target``; no local file but ``allowed`` can be imported.

    Deno checks ``--allow-read`` for dynamic imports only: a static
    ``import t from "/etc/passwd" with { type: "text" }`` (or a JSON import of
    any config file) reads whatever the user can read, whatever the
    permissions say.  Every ``file:`` URL is therefore mapped to a directory
    that does not exist (the import fails with "Module not found
    file:///toolscript-exec-cannot-import-local-files/..."), except the exact
    files named in ``allowed`` (the script itself, which Deno also resolves
    through the map), whose longer keys win.
    """
    imports = {prefix: _NO_LOCAL_IMPORTS for prefix in ("file:///", "file://localhost/")}
    for path in allowed:
        url = pathlib.Path(path).as_uri()
        imports[url] = url
    imports["toolscript"] = target
    return {"imports": imports}


def _token(gateway_url: Optional[str]) -> str:
    """The secret part of the gateway URL (its last path segment, ``TOKEN`` of ``/t/TOKEN``), or ""."""
    if not gateway_url:
        return ""
    from urllib.parse import urlsplit

    segment = urlsplit(gateway_url).path.rstrip("/").rpartition("/")[2]
    return segment if len(segment) >= _MIN_REDACTED else ""


class _Redacting:
    """Writes through to ``stream`` with the gateway's token replaced by ``<token>``.

    The module is imported from ``<gateway>/runtime/tools.ts``, so every stack
    trace through it (an uncaught ``ToolError``, ``console.log(err)``) names
    the URL with the token; Deno prints uncaught errors from its own call-site
    records, not from ``err.stack``, so the module cannot hide it.  Output is
    what the agent reads and keeps in its transcript: the token is taken out
    here, also when a chunk boundary splits it (a tail that could begin the
    token is held back until the next write or :meth:`finish`).
    """

    def __init__(self, stream: BinaryIO, token: str) -> None:
        self.stream = stream
        self.secret = token.encode("utf-8")
        self.pending = b""

    def write(self, data) -> int:
        text = (self.pending + bytes(data)).replace(self.secret, b"<token>")
        self.pending = b""
        for keep in range(min(len(self.secret) - 1, len(text)), 0, -1):
            if self.secret.startswith(text[-keep:]):
                text, self.pending = text[:-keep], text[-keep:]
                break
        if text:
            self.stream.write(text)
        return len(data)

    def flush(self) -> None:
        self.stream.flush()

    def finish(self) -> None:
        if self.pending:
            pending, self.pending = self.pending, b""
            try:
                self.stream.write(pending)
                self.stream.flush()
            except (OSError, ValueError):
                pass


def deno_argv(deno: str, script: str, import_map: str, gateway_url: Optional[str], heap_mib: int = HEAP_LIMIT_MIB,
              workspace: Optional[str] = None) -> list:
    """The ``deno run`` command line: permissions for the gateway's ``host:port`` and the workspace only."""
    argv = [
        deno, "run", "--quiet", "--no-prompt", "--no-check", "--no-config", "--no-lock", "--no-npm",
        f"--import-map={import_map}", f"--v8-flags=--max-old-space-size={int(heap_mib)}",
    ]
    host, port = process.gateway_address(gateway_url)
    if gateway_url:
        authority = _authority(host, port)
        argv += [f"--allow-net={authority}", f"--allow-import={authority}"]
    else:
        argv.append("--no-remote")  # else Deno imports from its default hosts (deno.land, jsr.io, esm.sh, ...)
    if workspace:
        argv += [f"--allow-read={workspace}", f"--allow-write={workspace}", f"--allow-env={process.WORKSPACE_ENV}"]
    return argv + [script]


def kernel_layer() -> Optional[str]:
    """The kernel layer's mode prefix for Deno (``"landlock(abi 7)+seccomp"``), or None when it does not run.

    It runs when the kernel has Landlock and seccomp, unless
    ``TOOLSCRIPT_EXEC_LAYER`` forces a lower rung, and needs a Python to run
    the launcher with.
    """
    import sys

    forced = os.environ.get(process.LAYER_ENV, "").strip().lower()
    if forced and forced != "landlock":
        return None
    probe = process.kernel_probe()
    if not probe["landlockAbi"] or not probe["seccomp"] or not sys.executable:
        if forced:
            raise UserError(f"{process.LAYER_ENV}=landlock, but this kernel offers no Landlock or no seccomp; unset {process.LAYER_ENV} to fall back")
        return None
    return f"landlock(abi {probe['landlockAbi']})+seccomp"


def _confined_argv(argv: list, root: str, work: str, cache: str, gateway_url: Optional[str], timeout: float,
                   workspace: Optional[str] = None) -> list:
    """``python -I -S confine.py POLICY -- deno run ...``: Deno under Landlock and seccomp.

    Deno may read the runtime's shared libraries, its own binary, the temp
    root (the import map) and write its work dir, ``DENO_DIR`` and the workspace; execute
    nothing but itself; connect over TCP only to the gateway's port.  The
    filter is the Python sandbox's, except that the launcher must exec Deno.
    """
    import json
    import sys

    binary = os.path.realpath(argv[0])
    _, port = process.gateway_address(gateway_url)
    policy = {
        "read": list(confine.SYSTEM_READ_PATHS) + list(confine.DEVICE_READ) + [root],
        "write": [work, cache] + ([workspace] if workspace else []) + list(confine.DEVICE_WRITE),
        "execute": [binary] + confine.elf_interpreters(binary),
        "connectPorts": [int(port)] if port else [],
        "deadlineMs": int((timeout + KERNEL_DEADLINE) * 1000),
        "allowExec": True,
        "landlock": True,
        "seccomp": True,
    }
    launcher, policy_file = os.path.join(root, process.CONFINE_NAME), os.path.join(root, POLICY_NAME)
    with open(launcher, "wb") as f:
        f.write(process.package_source("confine.py"))
    with open(policy_file, "w", encoding="utf-8") as f:
        json.dump(policy, f)
    return [sys.executable, "-I", "-S", "-B", launcher, policy_file, "--", binary] + list(argv[1:])


def run(
    code: str,
    *,
    filename: str = "<exec>",
    gateway_url: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    stdout: BinaryIO,
    stderr: BinaryIO,
    deno: Optional[str] = None,
    heap_mib: int = HEAP_LIMIT_MIB,
    kill_grace: float = KILL_GRACE,
    workspace: Optional[str] = None,
) -> ExecResult:
    """Run TypeScript ``code`` under Deno; stream its output; return how it ended.

    ``gateway_url`` (``http://127.0.0.1:PORT/t/TOKEN``) is where ``"toolscript"``
    is imported from and the only address the script may connect to; without
    it the script has no network and importing ``"toolscript"`` fails with a
    clear message.  ``deno`` is the executable (default: ``deno`` on PATH);
    ``heap_mib`` caps V8's heap; ``kill_grace`` is the time between SIGTERM
    and SIGKILL on a timeout.  ``workspace``: a directory the script runs in
    and may read and write (its path also in ``TOOLSCRIPT_WORKSPACE``); HOME
    and TMPDIR stay in the private temp dir.  On Linux Deno dies with this process (see
    ``process.die_with_parent``); it has no watchdog of its own.
    Raises ``UserError`` only when the script cannot be started at all.
    """
    started = time.monotonic()
    if os.name != "posix":
        raise UserError("toolscript exec needs a POSIX system (Linux or macOS): it relies on process groups")
    binary = deno or find_deno()
    process.check_timeout(timeout)
    process.gateway_address(gateway_url)  # a UserError for a URL that is not http://host:port/...
    if workspace is not None:
        if not os.path.isdir(workspace):
            raise UserError(f"the workspace {workspace!r} is not a directory; create it or pass another one")
        workspace = os.path.realpath(workspace)
        if "," in workspace:
            # Deno splits --allow-read/--allow-write lists at commas: "/tmp/a,/etc" would grant /etc.
            raise UserError(f"the workspace {workspace!r} has a comma in its path, which Deno's permission flags cannot name; use another directory")
    token = _token(gateway_url)
    kernel = kernel_layer()
    mode = f"{kernel}+{MODE}" if kernel else MODE
    redacting = [_Redacting(stdout, token), _Redacting(stderr, token)] if token else []
    out: Any = redacting[0] if redacting else stdout
    err: Any = redacting[1] if redacting else stderr
    # The real path: Deno names the main module by it, and the import map must match that name.
    root = process.make_temp_dir("deno")
    try:
        work, cache = os.path.join(root, "work"), os.path.join(root, "deno_dir")
        os.mkdir(work, 0o700)
        os.mkdir(cache, 0o700)
        script = os.path.join(work, _script_name(filename))
        with open(script, "wb") as f:
            f.write(code.encode("utf-8", "surrogateescape"))
        allowed = [script]
        if gateway_url:
            target = gateway_url.rstrip("/") + RUNTIME_PATH
        else:
            allowed.append(os.path.join(root, "no_gateway.ts"))
            target = pathlib.Path(allowed[-1]).as_uri()
            with open(allowed[-1], "w", encoding="utf-8") as f:
                f.write(_NO_GATEWAY_MODULE)
        import_map = os.path.join(root, "import_map.json")
        with open(import_map, "w", encoding="utf-8") as f:
            json.dump(import_map_for(target, allowed), f)
        argv = deno_argv(binary, script, import_map, gateway_url, heap_mib, workspace)
        if kernel:
            argv = _confined_argv(argv, root, work, cache, gateway_url, timeout, workspace)
        env = {"DENO_DIR": cache, "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1", "HOME": work, "TMPDIR": work}
        if workspace:
            env[process.WORKSPACE_ENV] = workspace
        logger.info("exec --lang ts: isolation %s, timeout %gs", mode, timeout)
        logger.debug("exec --lang ts: argv %s", argv)
        exit_code, child = process.supervise(
            argv,
            cwd=workspace or work,  # relative paths in the script are the workspace's
            env=env,
            stdout=out,
            stderr=err,
            timeout=timeout,
            max_output=max_output,
            grace=kill_grace,
            signal_message=lambda signum: _signal_message(signum, heap_mib),
        )
    finally:
        process.remove_tree(root)
        for stream in redacting:
            stream.finish()
    return ExecResult(exit_code, mode, child.timed_out, child.truncated, process.elapsed_ms(started), child.pgid)
