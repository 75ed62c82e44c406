"""The harness's expectations (tests/expectations/): which tests make test's short version leaves out on an entry
(selection.tsv), which tests are known to fail, to be flaky or not to run there (known-failures.tsv), which compared
values differ between the C and the Rust driver for a known reason (differences.tsv), and the reasons they give,
each written once (reasons.txt). Each file documents its format at its top."""

import fnmatch
import os
import re
from typing import NamedTuple

from matrix import runs_in_full

DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "expectations")
REASONS = "reasons.txt"
# The files in order (selection.tsv's rows only select: see lookup()), each with the kind of its rows: a fixed kind,
# or None when a column gives it (and the kinds that column allows).
FILES = [("selection.tsv", "short"), ("known-failures.tsv", None), ("differences.tsv", "differs")]
ROW_KINDS = ("xfail", "flaky", "skip")
COMPARED = "compare/"
REASON_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
REFERENCE = re.compile(r"\{([^{}]*)\}")


class FormatError(Exception):
    """An expectations file that does not follow its format; the message names the file and line."""


class Rule(NamedTuple):
    test: str  # test-id glob
    entry: str  # matrix-entry glob
    driver: str  # driver glob
    kind: str  # short, xfail, flaky, skip or differs
    reason: str  # the reason's text, every {ID} replaced
    reason_id: str
    where: str  # file:line, for messages


def load_reasons(path):
    """The reasons of reasons.txt: id -> text with every {ID} replaced."""
    raw, where, cur = {}, {}, None
    name = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                cur = None if not line.strip() else cur
                continue
            if line.startswith("  "):
                if cur is None:
                    raise FormatError(f"{name}:{n}: indented text with no reason id above it")
                raw[cur].append(line.strip())
                continue
            if not REASON_ID.match(line):
                raise FormatError(f"{name}:{n}: '{line[:40]}' is not a reason id (lower-case letters, digits, "
                                  "dashes), and text lines are indented by two spaces")
            if line in raw:
                raise FormatError(f"{name}:{n}: reason id '{line}' defined twice (first at line {where[line]})")
            cur = line
            raw[cur], where[cur] = [], n
    texts = {k: " ".join(v) for k, v in raw.items()}
    for k, v in texts.items():
        if not v:
            raise FormatError(f"{name}:{where[k]}: reason '{k}' has no text")

    done = {}

    def expand(rid, chain):
        if rid in done:
            return done[rid]
        if rid in chain:
            raise FormatError(f"{name}:{where[rid]}: reason '{rid}' refers to itself through "
                              + " -> ".join(chain + [rid]))

        def sub(m):
            ref = m.group(1)
            if ref not in texts:
                raise FormatError(f"{name}:{where[rid]}: reason '{rid}' refers to {{{ref}}}, which is not defined")
            return expand(ref, chain + [rid])

        done[rid] = REFERENCE.sub(sub, texts[rid])
        return done[rid]

    for rid in texts:
        expand(rid, [])
    referenced = {ref for v in texts.values() for ref in REFERENCE.findall(v)}
    return done, where, referenced


def load(directory=DIR):
    """The rules of the three files, in lookup order."""
    reasons, where, used = load_reasons(os.path.join(directory, REASONS))
    rules = []
    for fname, fixed in FILES:
        path = os.path.join(directory, fname)
        fields = "test glob, entry glob, driver glob, " + ("" if fixed else "|".join(ROW_KINDS) + ", ") + "reason id"
        want = 4 if fixed else 5
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line.strip() or line.startswith("#"):
                    continue
                parts = line.split("\t")
                here = f"{fname}:{n}"
                if len(parts) != want or not all(parts):
                    raise FormatError(f"{here}: expected {want} tab-separated fields ({fields})")
                kind = fixed or parts[3]
                if kind not in (fixed or ROW_KINDS):
                    raise FormatError(f"{here}: kind '{kind}' is not one of {', '.join(ROW_KINDS)}")
                rid = parts[-1]
                if rid not in reasons:
                    raise FormatError(f"{here}: reason id '{rid}' is not in {REASONS}")
                # Compared values are looked up in differences.tsv alone: its rows name compare/ ids and no other
                # file's rows do, so the order of the files never decides for them.
                if (kind == "differs") != parts[0].startswith(COMPARED):
                    raise FormatError(f"{here}: compare/ ids belong in differences.tsv, and only there")
                used.add(rid)
                rules.append(Rule(parts[0], parts[1], parts[2], kind, reasons[rid], rid, here))
    unused = sorted(set(reasons) - used, key=lambda r: where[r])
    if unused:
        raise FormatError(f"{REASONS}:{where[unused[0]]}: reason '{unused[0]}' is used by no row and no reason")
    return rules


def matches(rule, entry, driver, test):
    return fnmatch.fnmatchcase(test, rule.test) and fnmatch.fnmatchcase(entry, rule.entry) \
        and fnmatch.fnmatchcase(driver, rule.driver)


def lookup(rules, entry, driver, test):
    """(kind, reason) of the first rule that judges a result and matches, or (None, None). The selection rows (kind
    short) only decide what runs (see skips()): a test that runs is judged as on any other entry."""
    for rule in rules:
        if rule.kind != "short" and matches(rule, entry, driver, test):
            return rule.kind, rule.reason
    return None, None


def skips(rules, entry, driver, full):
    """run-suites' --skip options for a boot, in row order: the sections the known failures say not to run on this
    entry (kind skip), and the ones make test's short version leaves to another entry (kind short), unless the
    entry runs in full (`full`: entry names, or "all")."""
    whole = runs_in_full(entry, full)
    out = []
    for rule in rules:
        if rule.kind == "short" and whole:
            continue
        if rule.kind in ("skip", "short") and fnmatch.fnmatchcase(entry, rule.entry) \
                and fnmatch.fnmatchcase(driver, rule.driver):
            out += ["--skip", rule.test]
    return out
