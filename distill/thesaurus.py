"""Compile distill/thesaurus.tsv into toolscript/search/data/thesaurus.tsv, the form toolscript search reads.

The source says, for each word of real MCP tool catalogs, the words and short phrases a request may use
instead (``latency<TAB>delay|lag|response time``).  Search looks words up by index term (a stemmed word,
or two adjacent ones joined), so this script turns each alternative into the term a query would produce
and writes ``term<TAB>catalog term ...``, sorted: loading it at run time is a split per line, with no
stemming.  An alternative of more than two words (after stopwords), or one that is the word itself once
stemmed, or one with digits other than a single run of letters and digits ("k8s", read whole as search
reads it), is left out.  Same source and same toolscript.search, same bytes; tests/test_thesaurus.py checks
that the committed file is what this script makes of the committed source.

    python3 distill/thesaurus.py            # rewrite toolscript/search/data/thesaurus.tsv
    python3 distill/thesaurus.py --check    # exit 1 if it is out of date
"""

import argparse
import os
import sys
from typing import Dict, List, Optional, Set

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from toolscript.search.text import CHUNK, STOPWORDS, stem, tokenize  # noqa: E402
from toolscript.search.thesaurus import PATH  # noqa: E402

SOURCE = os.path.join(ROOT, "distill", "thesaurus.tsv")
OUTPUT = os.path.join(ROOT, "toolscript", "search", *PATH.split("/"))
HEADER = ("# toolscript search's thesaurus: query term<TAB>the catalog terms it may stand for.\n"
          "# Made by distill/thesaurus.py from distill/thesaurus.tsv: edit that, then run the script.\n")


def term(phrase: str) -> Optional[str]:
    """The index term a query yields for ``phrase``: its one word stemmed, or two adjacent ones joined."""
    if CHUNK.fullmatch(phrase) and not phrase.isalpha() and not phrase.isdigit():
        return phrase.lower()  # "k8s", "s3": search reads a run of letters and digits whole (its terms)
    words = [w for w in tokenize(phrase) if len(w) > 1 and w not in STOPWORDS]
    if not words or len(words) > 2 or not all(w.isalpha() for w in words):  # "l10n" is no "10"
        return None
    return "".join(stem(w) for w in words)


def compile_source(text: str) -> str:
    """The data file for the source ``text`` (see the module docstring)."""
    table: Dict[str, Set[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        word, tab, alternatives = line.partition("\t")
        if not tab:
            raise ValueError(f"{SOURCE}:{number}: expected 'word<TAB>alternative|...', got {line!r}")
        target = term(word)
        if target is None:
            continue
        for alternative in alternatives.split("|"):
            key = term(alternative.strip())
            if key and key != target:
                table.setdefault(key, set()).add(target)
    lines: List[str] = [f"{key}\t{' '.join(sorted(targets))}\n" for key, targets in sorted(table.items())]
    return HEADER + "".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the data file is up to date")
    args = parser.parse_args(argv)
    try:
        with open(SOURCE, encoding="utf-8") as f:
            compiled = compile_source(f.read())
    except ValueError as exc:  # a malformed line: say which, nothing written
        print(f"{exc}; fix that line and run python3 distill/thesaurus.py again", file=sys.stderr)
        return 2
    if args.check:
        try:
            with open(OUTPUT, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != compiled:
            print(f"{OUTPUT} is out of date: run python3 distill/thesaurus.py", file=sys.stderr)
            return 1
        return 0
    tmp = OUTPUT + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(compiled)
    os.replace(tmp, OUTPUT)
    print(f"wrote {OUTPUT}: {compiled.count(chr(10)) - 2} terms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
