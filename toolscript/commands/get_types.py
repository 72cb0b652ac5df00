"""``toolscript get-types``: typed stubs for the tools, to write exec scripts against."""

import argparse

from toolscript.output import print_json

SUMMARY = "Python stubs (or TypeScript) for the tools"
DESCRIPTION = """\
Print compact typed stubs: one class per server, one keyword-only function per
tool, with docstrings from the tool's description.  Call them in a script run
by 'toolscript exec' as  from toolscript import tools; tools.<server>.<tool>(...).

examples:
  toolscript get-types --filter github                   one server
  toolscript get-types --filter github__search_issues,builtin
  toolscript get-types --full                            every detail of every tool
  toolscript get-types --lang ts                         TypeScript declarations
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("--filter", metavar="A,B", help="servers and/or tool ids (server__tool)")
    parser.add_argument("--full", action="store_true", help="complete descriptions and schema details")
    parser.add_argument("--lang", choices=("python", "ts"), default="python", help="python (default) or ts")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.gateway.client import connect

    params = {"lang": args.lang, "filter": args.filter or ""}
    if args.full:
        params["full"] = "1"
    answer = connect(args.gateway_url, args.session).get("/types", **params)
    if args.json:
        print_json(answer)
        return 0
    print(answer["code"].rstrip())
    if answer.get("usage"):
        print(f"\n# usage: {answer['usage']}")
    if args.filter and not answer["tools"]:
        print(f"# no tools matched --filter {args.filter!r}; see 'toolscript list-servers'")
    return 0
