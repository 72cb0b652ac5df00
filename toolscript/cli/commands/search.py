"""``toolscript search QUERY``: find the few tools a task needs."""

import argparse
import time
from typing import Any, Dict, List

from toolscript import log
from toolscript.cli.args import unknown_name
from toolscript.cli.output import echo, format_table, print_json
from toolscript.log import one_line

logger = log.get("search")

DESCRIPTION = """\
Rank every tool of the gateway (built-ins and MCP servers) against a query:
names, descriptions and parameters, with stemming and typo tolerance, blended
with what the query means (static word vectors shipped with toolscript).
Scores are 0..1; --threshold drops weak matches (0.3 drops most unrelated
tools); --explain shows what each signal added.

examples:
  toolscript search "create a github issue"
  toolscript search "read file" --limit 5 --server filesystem
  toolscript search "weather forecast" --output types     stubs ready to use in exec
  toolscript search "send slack message" --json
  toolscript search "serach isues" --explain              why each tool scored what it did
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="+", help="what you want to do, in words")
    parser.add_argument("--limit", type=int, default=3, help="how many results (default 3)")
    parser.add_argument("--threshold", type=float, default=0.0, help="minimum score 0..1 (default 0)")
    parser.add_argument("--server", metavar="A,B", help="only these servers")
    parser.add_argument("--output", choices=("table", "types", "json"), default="table", help="table (default), types (Python stubs of the matches) or json")
    parser.add_argument("--explain", action="store_true", help="show each signal's share of every score (word matches, synonyms, typos, ...) and the words looked up")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.errors import UserError
    from toolscript.gateway.client import connect, redact

    if args.limit < 1 or not 0 <= args.threshold <= 1:
        raise UserError("--limit must be at least 1 and --threshold between 0 and 1", exit_code=2)
    if args.explain and args.output == "types":
        raise UserError("--explain shows a table or JSON, not types: drop --output types", exit_code=2)
    query = " ".join(args.query).strip()
    if not query:
        raise UserError('the query is empty: say what the tool should do, e.g. toolscript search "read a file"', exit_code=2)
    client = connect(args.gateway_url, args.session)
    logger.info("searching %r via the gateway at %s", query, redact(client.url))
    started = time.monotonic()
    params = {"q": query, "limit": str(args.limit), "threshold": str(args.threshold), "server": args.server or ""}
    if args.explain:
        params["explain"] = "1"
    answer = client.get("/search", **params)
    results = answer["results"]
    logger.info("%d result(s) in %.0f ms", len(results), (time.monotonic() - started) * 1000)
    if args.server:
        # The gateway searches whatever servers exist; a typo would just find nothing.
        known = [s["name"] for s in client.get("/servers")["servers"]]
        for name in [part.strip() for part in args.server.split(",") if part.strip()]:
            if name not in known:
                raise unknown_name("server", name, known, "toolscript list-servers")
    if args.explain:
        return _print_explained(query, answer, as_json=args.json or args.output == "json")
    if args.json or args.output == "json":
        print_json(results)
        return 0
    if not results:
        print(f"No tools matched {query!r}. Try fewer or broader words, lower --threshold, or see 'toolscript list-servers'.")
        return 0
    if args.output == "types":
        types = client.get("/types", filter=",".join(r["id"] for r in results))
        echo(types["code"].rstrip())  # the stubs quote servers' descriptions
        if types.get("usage"):
            echo(f"\n# usage: {types['usage']}")
        return 0
    rows = [(f"{r['score']:.2f}", r["id"], one_line(r.get("description"), 90)) for r in results]
    for line in format_table(rows, headers=("SCORE", "TOOL", "DESCRIPTION")):
        print(line)
    if answer.get("pending"):
        print(f"(still connecting, not searched: {', '.join(answer['pending'])})")
    return 0


def _print_explained(query: str, answer: Dict[str, Any], *, as_json: bool) -> int:
    """Each result's score with every signal's contribution, then the words the query looked up."""
    results, terms = answer["results"], answer.get("terms") or []
    if as_json:
        print_json({"query": query, "results": results, "terms": terms})
        return 0
    if not results:
        print(f"No tools matched {query!r}. Try fewer or broader words, lower --threshold, or see 'toolscript list-servers'.")
    else:
        from toolscript.search import SIGNALS

        # One column per signal that contributed to any result; signals this CLI does not know go last.
        present = {n for r in results for n in r.get("signals", {})}
        names: List[str] = [n for n in SIGNALS if n in present] + sorted(present - set(SIGNALS))
        rows = [[f"{r['score']:.3f}", r["id"]] + [_share(r.get("signals", {}).get(n)) for n in names] for r in results]
        for line in format_table(rows, headers=["SCORE", "TOOL"] + [n.upper() for n in names]):
            print(line)
    if terms:
        # A similar word shows what it stands for: "screenshot (similar_words x0.31 for picture)".
        looked_up = ", ".join(f"{t.get('word') or t['term']} ({t['signal']}" + (f" x{t['weight']:g}" if t["weight"] != 1 else "")
                              + (f" for {t['from']}" if t.get("from") else "") + ")" for t in terms)
        echo(f"looked up: {looked_up}")
    if answer.get("pending"):
        print(f"(still connecting, not searched: {', '.join(answer['pending'])})")
    return 0


def _share(value: object) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.3f}"
