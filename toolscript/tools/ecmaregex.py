"""ECMA-262 regular expressions for JSON Schema's ``pattern``, searched in linear time.

A tool's schema comes from a server and the string it is matched against from
a script; Python's backtracking ``re`` takes exponential time on patterns
such as ``^(a+)+$`` and cannot be interrupted, so one call could stall the
gateway.  This module parses the ECMA-262 syntax schemas use and searches
with a Thompson NFA whose subset states are cached as a DFA (built lazily,
one state per new situation): the time is linear in the string for any
pattern, and a bounded cache keeps memory flat.

Supported: literals, ``.``, classes (ranges, negation, ``[]`` and ``[^]``),
``\\d \\D \\w \\W \\s \\S``, ``\\p{..}``/``\\P{..}`` for Unicode general
categories, the character escapes (``\\t \\n \\v \\f \\r \\0 \\cX \\xHH
\\uHHHH \\u{H..}``, surrogate pairs joined), ``^ $ \\b \\B``, groups
(capturing, ``(?:)``, named), alternation and every quantifier (``* + ?
{m} {m,} {m,n}``, lazy too: for a yes/no search laziness changes nothing).
Semantics are ECMA-262's, not Python's: ``\\d`` and ``\\w`` are ASCII,
``\\s`` is ECMA's white space and line terminators, ``.`` stops at line
terminators, ``$`` is the end of the string only, and a search is
unanchored.

Backreferences and lookaround need backtracking.  Such a pattern is handed
to ``re`` (translated to keep ECMA's meaning) only when it has no nested or
alternating quantifiers, and only when a bound on its backtracking for the
given string's length is small; otherwise, and for syntax this module does
not know (a ``\\p`` it cannot map, an escape ECMA gives no meaning), the
search answers None: not checked.

Every search takes a :class:`Budget`; when it runs out the answer is None.
"""

import re
import unicodedata
from bisect import bisect_right
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

__all__ = ["Budget", "Pattern", "RegexError", "compile_pattern"]

MAX_PROGRAM = 10000  # NFA instructions; ``(x{1000}){1000}`` must not compile to a million
MAX_GROUP_NESTING = 50  # the parser and compiler recurse a few frames per group level
# The DFA cache of one pattern starts over when it passes any of these (memory stays flat
# whatever the pattern and strings; a compiled pattern is cached with its DFA).
MAX_DFA_STATES = 1000
MAX_DFA_STEPS = 20000  # NFA steps held by all cached states together
MAX_TRANSITIONS = 10000
DEFAULT_BUDGET = 10_000_000  # work units (~2 s) for one search when the caller gives no budget
CLOSURE_COST = 4  # units per NFA instruction visited while building a transition (a character costs 1)
BACKTRACK_COST_DIVISOR = 10  # ``re`` steps per unit: C steps are cheaper than this module's Python ones


class RegexError(ValueError):
    """The pattern is not a valid regular expression."""


class Unsupported(Exception):
    """The pattern uses syntax outside what this module can check (the reason is the message)."""


class Exhausted(Exception):
    """A :class:`Budget` ran out."""


class Budget:
    """Work units shared by the searches of one task (one call's argument check)."""

    __slots__ = ("left",)

    def __init__(self, units: int = DEFAULT_BUDGET) -> None:
        self.left = units

    def charge(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise Exhausted()


# --- character sets ------------------------------------------------------------------

_LINE_TERMINATORS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_SPACE_RANGES = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
    (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)
_DIGIT_RANGES = ((0x30, 0x39),)
_WORD_RANGES = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))

# General categories by their long names (and the groups of them), as \p{..} spells them.
_CATEGORY_GROUPS = {
    "L": ("Lu", "Ll", "Lt", "Lm", "Lo"), "LC": ("Lu", "Ll", "Lt"), "M": ("Mn", "Mc", "Me"), "N": ("Nd", "Nl", "No"),
    "P": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"), "S": ("Sm", "Sc", "Sk", "So"), "Z": ("Zs", "Zl", "Zp"),
    "C": ("Cc", "Cf", "Cs", "Co", "Cn"),
}
_SHORT_CATEGORIES = set(_CATEGORY_GROUPS) | {name for names in _CATEGORY_GROUPS.values() for name in names}
_CATEGORY_NAMES = {
    "letter": "L", "cased_letter": "LC", "uppercase_letter": "Lu", "lowercase_letter": "Ll", "titlecase_letter": "Lt",
    "modifier_letter": "Lm", "other_letter": "Lo", "mark": "M", "combining_mark": "M", "nonspacing_mark": "Mn",
    "spacing_mark": "Mc", "enclosing_mark": "Me", "number": "N", "decimal_number": "Nd", "digit": "Nd",
    "letter_number": "Nl", "other_number": "No", "punctuation": "P", "punct": "P", "connector_punctuation": "Pc",
    "dash_punctuation": "Pd", "open_punctuation": "Ps", "close_punctuation": "Pe", "initial_punctuation": "Pi",
    "final_punctuation": "Pf", "other_punctuation": "Po", "symbol": "S", "math_symbol": "Sm", "currency_symbol": "Sc",
    "modifier_symbol": "Sk", "other_symbol": "So", "separator": "Z", "space_separator": "Zs", "line_separator": "Zl",
    "paragraph_separator": "Zp", "other": "C", "control": "Cc", "cntrl": "Cc", "format": "Cf", "surrogate": "Cs",
    "private_use": "Co", "unassigned": "Cn",
}


class CharSet:
    """A set of code points: sorted ranges and general categories, possibly negated."""

    __slots__ = ("starts", "ends", "categories", "negated")

    def __init__(self, ranges: Any = (), categories: FrozenSet[str] = frozenset(), negated: bool = False) -> None:
        merged: List[List[int]] = []
        for low, high in sorted(ranges):
            if merged and low <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        self.starts = [low for low, _ in merged]
        self.ends = [high for _, high in merged]
        self.categories = categories
        self.negated = negated

    def contains(self, code: int) -> bool:
        index = bisect_right(self.starts, code) - 1
        found = index >= 0 and code <= self.ends[index]
        if not found and self.categories:
            found = unicodedata.category(chr(code)) in self.categories
        return found != self.negated

    def ranges(self) -> List[Tuple[int, int]]:
        return list(zip(self.starts, self.ends))


_DOT = CharSet(_LINE_TERMINATORS, negated=True)


def _is_word(char: Optional[str]) -> bool:
    return char is not None and (char == "_" or ("0" <= char <= "9") or ("a" <= char <= "z") or ("A" <= char <= "Z"))


# --- parsing -------------------------------------------------------------------------
#
# Nodes are tuples: ("set", CharSet), ("seq", [nodes]), ("alt", [nodes]),
# ("repeat", node, min, max or None), ("group", node, index or None, name or None),
# ("assert", "bol" | "eol" | "word" | "nonword"), ("look", node, ahead, negated),
# ("backref", number or name).  The last two need backtracking.

_SYNTAX = set("^$\\.*+?()[]{}|/")
_CONTROL_ESCAPES = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_CLASS_ESCAPES = {
    "d": (_DIGIT_RANGES, False), "D": (_DIGIT_RANGES, True), "w": (_WORD_RANGES, False), "W": (_WORD_RANGES, True),
    "s": (_SPACE_RANGES, False), "S": (_SPACE_RANGES, True),
}
_QUANTIFIER = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.at = 0
        self.groups = 0
        self.names: List[str] = []
        self.depth = 0

    def peek(self, offset: int = 0) -> str:
        index = self.at + offset
        return self.source[index] if index < len(self.source) else ""

    def parse(self) -> Any:
        node = self.disjunction()
        if self.at < len(self.source):
            raise RegexError(f"unmatched ')' at {self.at}")
        return node

    def disjunction(self) -> Any:
        branches = [self.alternative()]
        while self.peek() == "|":
            self.at += 1
            branches.append(self.alternative())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def alternative(self) -> Any:
        terms = []
        while self.at < len(self.source) and self.peek() not in "|)":
            terms.append(self.term())
        return terms[0] if len(terms) == 1 else ("seq", terms)

    def term(self) -> Any:
        char = self.peek()
        if char == "^":
            self.at += 1
            atom: Any = ("assert", "bol")
        elif char == "$":
            self.at += 1
            atom = ("assert", "eol")
        elif char == "\\" and self.peek(1) in ("b", "B"):
            atom = ("assert", "word" if self.peek(1) == "b" else "nonword")
            self.at += 2
        elif char == "(":
            atom = self.group()
        elif char == ".":
            self.at += 1
            atom = ("set", _DOT)
        elif char == "[":
            atom = ("set", self.char_class())
        elif char == "\\":
            atom = self.atom_escape()
        elif char in "*+?":
            raise RegexError(f"nothing to repeat at {self.at}")
        elif char == "{" and _QUANTIFIER.match(self.source, self.at):
            raise RegexError(f"nothing to repeat at {self.at}")
        else:
            self.at += 1
            atom = ("set", CharSet(((ord(char), ord(char)),)))
        return self.quantified(atom)

    def quantified(self, atom: Any) -> Any:
        char = self.peek()
        if char == "*":
            low, high, self.at = 0, None, self.at + 1
        elif char == "+":
            low, high, self.at = 1, None, self.at + 1
        elif char == "?":
            low, high, self.at = 0, 1, self.at + 1
        elif char == "{" and _QUANTIFIER.match(self.source, self.at):
            match = _QUANTIFIER.match(self.source, self.at)
            assert match is not None
            low = int(match.group(1))
            high = low if match.group(2) is None else (int(match.group(3)) if match.group(3) else None)
            if high is not None and high < low:
                raise RegexError(f"numbers out of order in {match.group(0)}")
            self.at = match.end()
        else:
            return atom
        if atom[0] == "assert":
            raise RegexError("nothing to repeat: an assertion cannot be quantified")
        if self.peek() == "?":
            self.at += 1  # lazy: the same yes/no answer
        return ("repeat", atom, low, high)

    def group(self) -> Any:
        self.at += 1
        self.depth += 1
        if self.depth > MAX_GROUP_NESTING:
            raise Unsupported(f"groups nested more than {MAX_GROUP_NESTING} deep")
        index: Optional[int] = None
        name: Optional[str] = None
        look: Optional[Tuple[bool, bool]] = None
        if self.peek() == "?":
            kind = self.source[self.at + 1:self.at + 3]
            if kind.startswith(":"):
                self.at += 2
            elif kind.startswith("="):
                self.at, look = self.at + 2, (True, False)
            elif kind.startswith("!"):
                self.at, look = self.at + 2, (True, True)
            elif kind == "<=":
                self.at, look = self.at + 3, (False, False)
            elif kind == "<!":
                self.at, look = self.at + 3, (False, True)
            elif kind.startswith("<"):
                end = self.source.find(">", self.at)
                name = self.source[self.at + 2:end] if end > 0 else ""
                if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", name):
                    raise RegexError(f"bad group name {name!r}")
                self.at = end + 1
                self.groups += 1
                index = self.groups
                self.names.append(name)
            else:
                raise RegexError(f"unknown group kind '(?{kind[:1]}' at {self.at - 1}")
        else:
            self.groups += 1
            index = self.groups
        inner = self.disjunction()
        if self.peek() != ")":
            raise RegexError("missing ')'")
        self.at += 1
        self.depth -= 1
        if look is not None:
            return ("look", inner, look[0], look[1])
        return ("group", inner, index, name)

    def atom_escape(self) -> Any:
        self.at += 1
        char = self.peek()
        if not char:
            raise RegexError("a pattern cannot end with a backslash")
        if char in "123456789":
            digits = re.match(r"[0-9]+", self.source[self.at:])
            assert digits is not None
            self.at += len(digits.group(0))
            return ("backref", int(digits.group(0)))
        if char == "k" and self.peek(1) == "<":
            end = self.source.find(">", self.at)
            if end < 0:
                raise RegexError("bad named backreference")
            name = self.source[self.at + 2:end]
            self.at = end + 1
            return ("backref", name)
        return ("set", self.class_or_char_escape(in_class=False))

    def class_or_char_escape(self, in_class: bool) -> CharSet:
        """After a backslash: a class escape or one character, as a set."""
        char = self.peek()
        if char in _CLASS_ESCAPES:
            self.at += 1
            ranges, negated = _CLASS_ESCAPES[char]
            return CharSet(ranges, negated=negated)
        if char in ("p", "P"):
            return self.property_escape(negated=char == "P")
        code = self.char_escape(in_class)
        return CharSet(((code, code),))

    def property_escape(self, negated: bool) -> CharSet:
        if self.peek(1) != "{":
            raise Unsupported("\\p without {...}")
        end = self.source.find("}", self.at)
        if end < 0:
            raise RegexError("unterminated \\p{")
        text = self.source[self.at + 2:end]
        self.at = end + 1
        key, equals, value = text.partition("=")
        name = value if equals and key in ("General_Category", "gc") else text
        short = name if name in _SHORT_CATEGORIES else _CATEGORY_NAMES.get(name.lower())
        if short is None:
            raise Unsupported(f"the Unicode property \\p{{{text}}}")
        categories = frozenset(_CATEGORY_GROUPS.get(short, (short,)))
        return CharSet(categories=categories, negated=negated)

    def char_escape(self, in_class: bool) -> int:
        """The code point of a character escape (the backslash is consumed)."""
        char = self.peek()
        self.at += 1
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char == "b" and in_class:
            return 0x08
        if char == "0" and not self.peek().isdigit():
            return 0
        if char == "c":
            letter = self.peek()
            if letter.isascii() and letter.isalpha():
                self.at += 1
                return ord(letter) % 32
            self.at -= 1
            return ord("\\")  # Annex B: a lone \c is a backslash
        if char == "x":
            digits = self.source[self.at:self.at + 2]
            if re.fullmatch(r"[0-9A-Fa-f]{2}", digits):
                self.at += 2
                return int(digits, 16)
            return ord("x")  # Annex B: \x without two hex digits is x
        if char == "u":
            return self.unicode_escape()
        if char == "-" or char in _SYNTAX or not (char.isalnum() or char == "_"):
            return ord(char)
        # \a, \z, \A, \Z, \1 in a class...: Python would read them otherwise, ECMA-262 (with u) refuses them.
        raise Unsupported(f"the escape \\{char}")

    def unicode_escape(self) -> int:
        if self.peek() == "{":
            end = self.source.find("}", self.at)
            digits = self.source[self.at + 1:end] if end > 0 else ""
            if not re.fullmatch(r"[0-9A-Fa-f]{1,6}", digits) or int(digits, 16) > 0x10FFFF:
                raise RegexError("bad \\u{...} escape")
            self.at = end + 1
            return int(digits, 16)
        digits = self.source[self.at:self.at + 4]
        if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
            return ord("u")  # Annex B
        self.at += 4
        code = int(digits, 16)
        low = self.source[self.at:self.at + 6]
        if 0xD800 <= code <= 0xDBFF and re.fullmatch(r"\\u[Dd][C-Fc-f][0-9A-Fa-f]{2}", low):
            self.at += 6  # a surrogate pair is one code point, as strings decoded from JSON have it
            return 0x10000 + ((code - 0xD800) << 10) + (int(low[2:], 16) - 0xDC00)
        return code

    def char_class(self) -> CharSet:
        self.at += 1
        negated = self.peek() == "^"
        if negated:
            self.at += 1
        ranges: List[Tuple[int, int]] = []
        categories: List[CharSet] = []  # class escapes that are no plain ranges (\P, \W, ...)
        while True:
            if self.at >= len(self.source):
                raise RegexError("missing ']'")
            if self.peek() == "]":
                self.at += 1
                break
            first = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.at += 1
                second = self.class_atom()
                if isinstance(first, int) and isinstance(second, int):
                    if first > second:
                        raise RegexError("range out of order in character class")
                    ranges.append((first, second))
                    continue
                # Annex B: a class escape at either end makes the hyphen literal.
                for atom in (first, ord("-"), second):
                    _add_class_atom(atom, ranges, categories)
                continue
            _add_class_atom(first, ranges, categories)
        if not categories:
            return CharSet(ranges, negated=negated)
        return _union(CharSet(ranges), categories, negated)

    def class_atom(self) -> Any:
        """One code point, or a CharSet for a class escape."""
        char = self.peek()
        if char != "\\":
            self.at += 1
            return ord(char)
        self.at += 1
        if not self.peek():
            raise RegexError("a pattern cannot end with a backslash")
        if self.peek() == "-":
            self.at += 1
            return ord("-")
        if self.peek() in _CLASS_ESCAPES or self.peek() in ("p", "P"):
            return self.class_or_char_escape(in_class=True)
        return self.char_escape(in_class=True)


def _add_class_atom(atom: Any, ranges: List[Tuple[int, int]], sets: List[CharSet]) -> None:
    if isinstance(atom, int):
        ranges.append((atom, atom))
    elif not atom.negated and not atom.categories:
        ranges.extend(atom.ranges())
    else:
        sets.append(atom)


class _UnionSet(CharSet):
    """A class holding negated or category escapes: any member set matches."""

    __slots__ = ("members",)

    def __init__(self, members: List[CharSet], negated: bool) -> None:
        super().__init__(negated=negated)
        self.members = members

    def contains(self, code: int) -> bool:
        return any(member.contains(code) for member in self.members) != self.negated


def _union(plain: CharSet, others: List[CharSet], negated: bool) -> CharSet:
    return _UnionSet([plain] + others, negated)


# --- the linear matcher ----------------------------------------------------------------

_CHAR, _SPLIT, _JMP, _ASSERT, _MATCH = range(5)


def _uses(node: Any, kinds: Tuple[str, ...]) -> bool:
    """Does the tree contain a node of one of ``kinds``?  (Iterative: trees can be wide.)"""
    stack = [node]
    while stack:
        item = stack.pop()
        if item[0] in kinds:
            return True
        if item[0] in ("seq", "alt"):
            stack.extend(item[1])
        elif item[0] in ("repeat", "group", "look"):
            stack.append(item[1])
    return False


class _Compiler:
    def __init__(self) -> None:
        self.program: List[List[Any]] = []

    def emit(self, *instruction: Any) -> int:
        if len(self.program) >= MAX_PROGRAM:
            raise Unsupported(f"the pattern expands to more than {MAX_PROGRAM} steps")
        self.program.append(list(instruction))
        return len(self.program) - 1

    def node(self, node: Any) -> None:
        kind = node[0]
        if kind == "set":
            self.emit(_CHAR, node[1])
        elif kind == "seq":
            for item in node[1]:
                self.node(item)
        elif kind == "alt":
            jumps = []
            branches = node[1]
            for branch in branches[:-1]:
                split = self.emit(_SPLIT, None, None)
                self.program[split][1] = len(self.program)
                self.node(branch)
                jumps.append(self.emit(_JMP, None))
                self.program[split][2] = len(self.program)
            self.node(branches[-1])
            for jump in jumps:
                self.program[jump][1] = len(self.program)
        elif kind == "group":
            self.node(node[1])
        elif kind == "assert":
            self.emit(_ASSERT, node[1])
        elif kind == "repeat":
            self.repeat(node[1], node[2], node[3])
        else:
            raise Unsupported(f"{kind} needs backtracking")

    def repeat(self, atom: Any, low: int, high: Optional[int]) -> None:
        if low > MAX_PROGRAM or (high is not None and high > MAX_PROGRAM):
            raise Unsupported(f"the pattern expands to more than {MAX_PROGRAM} steps")
        for _ in range(low):
            self.node(atom)
        if high is None:
            loop = self.emit(_SPLIT, None, None)
            self.program[loop][1] = len(self.program)
            self.node(atom)
            self.emit(_JMP, loop)
            self.program[loop][2] = len(self.program)
            return
        splits = []
        for _ in range(high - low):
            split = self.emit(_SPLIT, None, None)
            self.program[split][1] = len(self.program)
            splits.append(split)
            self.node(atom)
        for split in splits:
            self.program[split][2] = len(self.program)


class _DState:
    """One cached subset state: the NFA steps waiting for the next character, and what came before."""

    __slots__ = ("pcs", "at_start", "prev_word", "next", "end")

    def __init__(self, pcs: FrozenSet[int], at_start: bool, prev_word: bool) -> None:
        self.pcs = pcs
        self.at_start = at_start
        self.prev_word = prev_word
        self.next: Dict[str, Any] = {}
        self.end: Optional[bool] = None  # does the pattern match here at the end of the string (cached)


_MATCHED = _DState(frozenset(), False, False)
_DEAD = _DState(frozenset(), False, False)


class _Linear:
    """A compiled pattern searched by NFA simulation with a lazily built, bounded DFA cache."""

    def __init__(self, program: List[List[Any]]) -> None:
        self.program = [tuple(instruction) for instruction in program]
        self.has_word_assertions = any(i[0] == _ASSERT and i[1] in ("word", "nonword") for i in self.program)
        self.anchored = self._anchored()
        self._reset()

    def _reset(self) -> None:
        self.states: Dict[Tuple[FrozenSet[int], bool, bool], _DState] = {}
        self.transitions = 0
        self.held = 0  # NFA steps in all cached states
        self.start = self._state(frozenset(), True, False)

    def _state(self, pcs: FrozenSet[int], at_start: bool, prev_word: bool) -> _DState:
        key = (pcs, at_start, prev_word)
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = _DState(pcs, at_start, prev_word)
            self.held += len(pcs)
        return state

    def _anchored(self) -> bool:
        """Can a match only start at position 0 (every way in passes ``^`` first)?"""
        seen = set()
        stack = [0]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = self.program[pc]
            if op[0] in (_CHAR, _MATCH):
                return False
            if op[0] == _SPLIT:
                stack.extend((op[1], op[2]))
            elif op[0] == _JMP:
                stack.append(op[1])
            elif op[0] == _ASSERT and op[1] != "bol":
                stack.append(pc + 1)
        return True

    def _closure(self, state: _DState, char: Optional[str], budget: Budget) -> Tuple[bool, List[int]]:
        """(matched, consuming steps) of the state's steps plus a fresh start, before ``char`` (None: the end)."""
        program = self.program
        next_word = _is_word(char)
        seen = set()
        consumers = []
        stack = list(state.pcs)
        stack.append(0)  # the search is unanchored: a match may start at any position
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = program[pc]
            kind = op[0]
            if kind == _CHAR:
                consumers.append(pc)
            elif kind == _SPLIT:
                stack.append(op[2])
                stack.append(op[1])
            elif kind == _JMP:
                stack.append(op[1])
            elif kind == _MATCH:
                budget.charge(len(seen) * CLOSURE_COST)
                return True, consumers
            else:
                test = op[1]
                if test == "bol":
                    passes = state.at_start
                elif test == "eol":
                    passes = char is None
                elif test == "word":
                    passes = state.prev_word != next_word
                else:
                    passes = state.prev_word == next_word
                if passes:
                    stack.append(pc + 1)
        budget.charge(len(seen) * CLOSURE_COST)
        return False, consumers

    def _step(self, state: _DState, char: str, budget: Budget) -> _DState:
        matched, consumers = self._closure(state, char, budget)
        if matched:
            result = _MATCHED
        else:
            code = ord(char)
            program = self.program
            pcs = frozenset(pc + 1 for pc in consumers if program[pc][1].contains(code))
            if not pcs and self.anchored:
                result = _DEAD  # nothing in flight, and no match can start after position 0
            else:
                result = self._state(pcs, False, self.has_word_assertions and _is_word(char))
        if self.transitions >= MAX_TRANSITIONS or len(self.states) > MAX_DFA_STATES or self.held > MAX_DFA_STEPS:
            self._reset()  # a pattern with very many subset states: start the cache over
        self.transitions += 1
        state.next[char] = result
        return result

    def search(self, text: str, budget: Budget) -> bool:
        budget.charge(len(text))
        state = self.start
        for char in text:
            following = state.next.get(char)
            if following is None:
                following = self._step(state, char, budget)
            if following is _MATCHED:
                return True
            if following is _DEAD:
                return False
            state = following
        if state.end is None:
            state.end = self._closure(state, None, budget)[0]
        return state.end


# --- the backtracking fallback ------------------------------------------------------------

MAX_BACKTRACK_STEPS = 10_000_000  # a bound on re's work for one search, from the pattern's shape and the string's length


def _shape(node: Any) -> Tuple[List[Tuple[int, Optional[int]]], int, int]:
    """(quantifier bounds, alternation branches, lookarounds) of a tree; Unsupported for nested quantifiers.

    A quantifier over anything that itself repeats or branches is what makes
    backtracking exponential; without those, re's work is bounded by the
    product of the choices each quantifier and alternation leaves open.
    """
    quantifiers: List[Tuple[int, Optional[int]]] = []
    branches = 1
    lookarounds = 0
    stack = [node]
    while stack:
        item = stack.pop()
        kind = item[0]
        if kind == "repeat":
            if _uses(item[1], ("repeat", "alt", "look")):
                raise Unsupported("a quantifier over a group that repeats or branches, next to a backreference or lookaround")
            quantifiers.append((item[2], item[3]))
        elif kind == "alt":
            branches *= len(item[1])
            stack.extend(item[1])
        elif kind == "seq":
            stack.extend(item[1])
        elif kind == "group":
            stack.append(item[1])
        elif kind == "look":
            lookarounds += 1
            stack.append(item[1])
    return quantifiers, branches, lookarounds


def _translate(node: Any, out: List[str]) -> None:
    """Python ``re`` source with the ECMA-262 meaning of ``node``."""
    kind = node[0]
    if kind == "set":
        out.append(_python_set(node[1]))
    elif kind == "seq":
        for item in node[1]:
            _translate(item, out)
    elif kind == "alt":
        out.append("(?:")
        for index, branch in enumerate(node[1]):
            if index:
                out.append("|")
            _translate(branch, out)
        out.append(")")
    elif kind == "group":
        out.append("(" if node[2] is not None else "(?:")
        _translate(node[1], out)
        out.append(")")
    elif kind == "repeat":
        out.append("(?:")
        _translate(node[1], out)
        high = "" if node[3] is None else str(node[3])
        out.append(f"){{{node[2]},{high}}}")
    elif kind == "assert":
        out.append({"bol": r"\A", "eol": r"\Z", "word": r"\b", "nonword": r"\B"}[node[1]])
    elif kind == "look":
        out.append("(?" + ("" if node[2] else "<") + ("!" if node[3] else "="))
        _translate(node[1], out)
        out.append(")")
    else:  # a backreference: by number (named groups are numbered too)
        out.append(f"(?:\\{node[1]})")


def _python_set(charset: CharSet) -> str:
    if isinstance(charset, _UnionSet) or charset.categories:
        raise Unsupported("a class with categories or negated escapes next to a backreference or lookaround")
    body = "".join(_python_char(low) + ("-" + _python_char(high) if high > low else "") for low, high in charset.ranges())
    if not body:
        return "[\\s\\S]" if charset.negated else "(?!)"
    return ("[^" if charset.negated else "[") + body + "]"


def _python_char(code: int) -> str:
    return f"\\U{code:08x}"


class _Backtracking:
    """A pattern with backreferences or lookaround, run by ``re`` when its work is provably small."""

    def __init__(self, tree: Any, parser: _Parser) -> None:
        self.quantifiers, self.branches, self.lookarounds = _shape(tree)
        named = {name: index + 1 for index, name in enumerate(parser.names)}
        tree = _number_backrefs(tree, named, parser.groups)
        out: List[str] = []
        _translate(tree, out)
        try:
            # ASCII: \b and \B then know ECMA's word characters (every class is spelled out as ranges).
            self.regex = re.compile("".join(out), re.ASCII)
        except (re.error, RecursionError, OverflowError, ValueError) as exc:
            raise Unsupported(f"Python cannot run it ({exc})") from None

    def steps(self, length: int) -> int:
        """An upper bound on re's work for a string of ``length`` characters."""
        paths = self.branches
        for low, high in self.quantifiers:
            choices = (length if high is None else min(high, length)) - min(low, length) + 1
            paths *= max(1, choices)
            if paths > MAX_BACKTRACK_STEPS:
                return paths
        # each start position x each path x the string walked (lookarounds and backreferences re-walk it)
        return (length + 1) * paths * (length + 1) * (1 + self.lookarounds)

    def search(self, text: str, budget: Budget) -> Optional[bool]:
        steps = self.steps(len(text))
        if steps > MAX_BACKTRACK_STEPS:
            return None
        budget.charge(len(text) + steps // BACKTRACK_COST_DIVISOR)
        return self.regex.search(text) is not None


def _number_backrefs(node: Any, named: Dict[str, int], groups: int) -> Any:
    """The tree with named backreferences as numbers; Unsupported for one that names no group."""
    kind = node[0]
    if kind == "backref":
        number = named.get(node[1]) if isinstance(node[1], str) else node[1]
        if number is None or number > groups:
            raise Unsupported("a backreference to a group that does not exist (or a legacy octal escape)")
        return ("backref", number)
    if kind in ("seq", "alt"):
        return (kind, [_number_backrefs(item, named, groups) for item in node[1]])
    if kind in ("repeat", "group", "look"):
        return (kind, _number_backrefs(node[1], named, groups)) + tuple(node[2:])
    return node


# --- the public face ----------------------------------------------------------------------


class Pattern:
    """A compiled ``pattern``: :meth:`search` says whether it occurs in a string (None: not checked)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.unchecked: Optional[str] = None  # why searches answer None, when they always do
        self._linear: Optional[_Linear] = None
        self._backtracking: Optional[_Backtracking] = None
        parser = _Parser(source)
        try:
            tree = parser.parse()
            if _uses(tree, ("look", "backref")):
                self._backtracking = _Backtracking(tree, parser)
            else:
                compiler = _Compiler()
                compiler.node(tree)
                compiler.emit(_MATCH)
                self._linear = _Linear(compiler.program)
        except Unsupported as exc:
            self.unchecked = str(exc)
        except RecursionError:
            self.unchecked = "the pattern nests too deeply"

    def search(self, text: str, budget: Optional[Budget] = None) -> Optional[bool]:
        """Does the pattern occur in ``text``?  None when it could not be checked (``unchecked`` says
        why when it never can be; otherwise the budget ran out or the string is too long for it)."""
        if self.unchecked is not None:
            return None
        budget = Budget() if budget is None else budget
        try:
            if self._linear is not None:
                return self._linear.search(text, budget)
            assert self._backtracking is not None
            return self._backtracking.search(text, budget)
        except Exhausted:
            return None


def compile_pattern(source: str) -> Pattern:
    """Parse ``source``; RegexError if it is not a regular expression.

    A pattern using syntax this module cannot check compiles, to a Pattern
    whose ``unchecked`` says why and whose searches answer None.
    """
    return Pattern(source)
