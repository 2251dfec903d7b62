"""Tag schemes for labelling words: IOB1, IOB2 (BIO) and BIOES read, IOB2 inside kpipe.

IOB2: every entity starts with B-TYPE, continues with I-TYPE; O outside. IOB1 (CoNLL-2003's original files):
I-TYPE everywhere, B-TYPE only to start an entity right after another of the same type. BIOES: S-TYPE for a
one-word entity, E-TYPE ends a longer one. Entities are read the way conlleval reads them: an I-TYPE that
continues nothing (after O or another type) starts an entity.
"""

from __future__ import annotations

SCHEMES = ("auto", "iob1", "iob2", "bioes")
PREFIXES = {"iob1": "BI", "iob2": "BI", "bioes": "BIES"}


def split_tag(tag: str) -> tuple[str, str]:
    """("B", "PER") for "B-PER", ("O", "") for "O"."""
    if tag == "O":
        return "O", ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def tag_problem(tag: str, scheme: str) -> str:
    """Why `tag` is not a tag of `scheme` ("" when it is)."""
    prefix, kind = split_tag(tag)
    if prefix == "O":
        return ""
    allowed = PREFIXES["bioes" if scheme == "auto" else scheme]
    if prefix not in allowed or not kind or len(prefix) != 1:
        names = {"auto": "IOB or BIOES", "iob1": "IOB1", "iob2": "IOB2", "bioes": "BIOES"}
        return f"tag '{tag}' is not O or {'/'.join(p + '-TYPE' for p in allowed)} ({names[scheme]} tags)"
    return ""


def detect_scheme(sentences: list[list[str]]) -> str:
    """The scheme the tags are written in: BIOES when S- or E- tags occur; IOB1 when no B- tag starts an entity
    (after O or another type) while some I- tag does; else IOB2."""
    b_starts = i_starts = False
    for tags in sentences:
        previous = ("O", "")
        for tag in tags:
            prefix, kind = split_tag(tag)
            if prefix in ("S", "E"):
                return "bioes"
            starts = previous[0] == "O" or previous[1] != kind
            b_starts |= prefix == "B" and starts
            i_starts |= prefix == "I" and starts
            previous = (prefix, kind)
    return "iob1" if i_starts and not b_starts else "iob2"


def to_iob2(tags: list[str], scheme: str) -> tuple[list[str], int]:
    """The tags in IOB2, and how many I- tags continued nothing (read as starting an entity, as conlleval does;
    legal in IOB1, where that is how entities start)."""
    out, orphans, previous = [], 0, ""
    for tag in tags:
        prefix, kind = split_tag(tag)
        if prefix == "O":
            out.append("O")
            previous = ""
            continue
        if prefix in ("S", "B"):
            out.append(f"B-{kind}")
        elif prefix in ("I", "E"):
            if previous != kind:
                orphans += scheme != "iob1"
                out.append(f"B-{kind}")
            else:
                out.append(f"I-{kind}")
        previous = "" if prefix in ("S", "E") else kind
    return out, orphans


def entities(tags: list[str]) -> list[tuple[str, int, int]]:
    """(type, first word, one past the last word) of each entity of IOB2 `tags`, conlleval's way."""
    found, start, kind = [], None, ""
    for i, tag in enumerate([*tags, "O"]):
        prefix, this = split_tag(tag)
        if start is not None and (prefix in ("O", "B") or this != kind):
            found.append((kind, start, i))
            start = None
        if prefix in ("B", "I") and start is None:
            start, kind = i, this
    return found
