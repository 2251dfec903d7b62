"""`json.loads` of a large request body in pieces, so that no single call holds the GIL for long.

CPython's JSON parser is C code that holds the GIL for a whole call: a 16 MiB body parsed in one call froze every
other thread of the server (the event loop, the small requests' codec threads) for about 110 ms (reliability
finding 13). Here the body's structure is found first with NumPy (which quotes are escaped, which characters lie
inside strings, how deep each bracket is), then the large arrays and objects are parsed a few hundred KiB of
elements at a time and put together. Between two pieces the parsing thread can be made to give the GIL up (after
Python's switch interval, 5 ms), so the other threads wait at most about that long at a time.

The result is exactly `json.loads(text)`'s: a piece is cut only at a comma between two elements of one container,
so each piece is itself valid JSON when the body is. Anything the scan does not understand (invalid JSON, an
unbalanced bracket) is handed to `json.loads` whole, whose error message names the place.
"""

from __future__ import annotations

import bisect
import codecs
import json

import numpy as np

PIECE_BYTES = 256 * 1024  # about 2 ms of parsing: the longest hold of the GIL by one call
SCAN_BLOCK_BYTES = 1024 * 1024  # the structure is found a block at a time (each NumPy call about a millisecond)
_QUOTE, _BACKSLASH, _COMMA, _COLON = ord('"'), ord("\\"), ord(","), ord(":")
_OPENERS, _CLOSERS = (ord("["), ord("{")), (ord("]"), ord("}"))
_STEP = np.zeros(256, np.int8)  # by byte: +1 an opening bracket, -1 a closing one
_STEP[list(_OPENERS)], _STEP[list(_CLOSERS)] = 1, -1
_STRUCTURAL = np.zeros(256, bool)
_STRUCTURAL[[*_OPENERS, *_CLOSERS, _COMMA, _COLON]] = True


class _NotUnderstood(Exception):
    """The scan cannot cut this text: it is parsed whole (and `json.loads` says what is wrong, if anything)."""


class TooDeep(ValueError):
    """The JSON nests lists and objects deeper than `max_depth`."""


def loads(data: bytes, piece_bytes: int = PIECE_BYTES, block_bytes: int = SCAN_BLOCK_BYTES,
          max_depth: int | None = None):
    """`json.loads(data)` of UTF-8 `data`, in pieces of about `piece_bytes` when it is larger (the structural
    characters are ASCII, never part of a multi-byte character, so the bytes can be cut where the text can).

    Raises:
        TooDeep: lists and objects nested more than `max_depth` levels (read off the scan for a large body: walking
            two million parsed strings to learn their depth cost about 100 ms of CPU).
    """
    if len(data) > piece_bytes:
        try:
            pieces = _Pieces(data, piece_bytes, block_bytes)
            if max_depth is not None and pieces.levels() > max_depth:
                raise TooDeep(f"nested more than {max_depth} levels")
            return pieces.value(0, len(data))
        except (_NotUnderstood, json.JSONDecodeError, RecursionError):
            pass  # parsed whole below: the scan misread invalid JSON, whose error json.loads names
    value = json.loads(data)
    if max_depth is not None and not depth_at_most(value, max_depth):
        raise TooDeep(f"nested more than {max_depth} levels")
    return value


def depth_at_most(value, limit: int) -> bool:
    """Whether `value` (parsed JSON) nests at most `limit` lists/objects deep, looking at each container once."""
    level, todo = 0, [value]
    while todo:
        containers = [v for v in todo if isinstance(v, (list, dict))]
        if not containers:
            return True
        level += 1
        if level > limit:
            return False
        todo = [item for c in containers for item in (c.values() if isinstance(c, dict) else c)
                if isinstance(item, (list, dict))]
    return True


def check_utf8(data: bytes, piece_bytes: int = 4 * PIECE_BYTES) -> None:
    """UnicodeDecodeError (its `start` counted from the beginning of `data`) unless `data` is UTF-8, checked a
    piece at a time: one decode of a 16 MiB body of non-ASCII text holds the GIL for tens of milliseconds."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    for start in range(0, max(len(data), 1), piece_bytes):
        kept = len(decoder.getstate()[0])  # the start of a character cut by the previous piece, decoded with this one
        try:
            decoder.decode(data[start:start + piece_bytes], final=start + piece_bytes >= len(data))
        except UnicodeDecodeError as error:
            offset = start - kept
            raise UnicodeDecodeError("utf-8", data, offset + error.start, offset + error.end, error.reason) from None


class _Pieces:
    def __init__(self, data: bytes, piece_bytes: int, block_bytes: int):
        """Find the brackets, commas and colons outside strings, and each one's depth, a block of the text at a time
        (NumPy's calls hold the GIL too: on the whole of a 16 MiB body they would stop the others as long)."""
        self.data, self.piece_bytes = data, piece_bytes
        raw = np.frombuffer(data, np.uint8)
        positions, kinds, depths = [], [], []
        backslashes_before = quotes_before = depth_before = 0  # carried from one block to the next
        for offset in range(0, len(raw), block_bytes):
            block = raw[offset:offset + block_bytes]
            quotes = np.flatnonzero(block == _QUOTE)
            # a quote is escaped when an odd number of backslashes precede it (outside strings a backslash is
            # invalid JSON: then a piece fails to parse, and the whole text is parsed at once)
            escaped = (quotes == 0) & (backslashes_before % 2 == 1)
            backslashes = np.flatnonzero(block == _BACKSLASH)
            if len(backslashes):
                starts = np.flatnonzero(np.diff(backslashes, prepend=-2) != 1)  # the runs of backslashes
                last = np.append(starts[1:], len(backslashes)) - 1
                run_ends, run_lengths = backslashes[last], last - starts + 1
                if backslashes[0] == 0:
                    run_lengths[0] += backslashes_before
                at = np.minimum(np.searchsorted(run_ends, quotes - 1), len(run_ends) - 1)
                escaped |= (run_ends[at] == quotes - 1) & (run_lengths[at] % 2 == 1)
                backslashes_before = int(run_lengths[-1]) if run_ends[-1] == len(block) - 1 else 0
            else:
                backslashes_before = 0
            quotes = quotes[~escaped]
            # outside strings: an even number of unescaped quotes before them
            candidates = np.flatnonzero(_STRUCTURAL[block])
            structural = candidates[(np.searchsorted(quotes, candidates) + quotes_before) % 2 == 0]
            quotes_before += len(quotes)
            found = block[structural]
            step = _STEP[found].astype(np.int64)
            depths.append(np.cumsum(step) + depth_before - (step == 1))  # an opener counts at the outer depth
            depth_before += int(step.sum())
            positions.append(structural + offset)
            kinds.append(found)
        self.positions, self.kinds, self.depth = (np.concatenate(parts) if parts else np.zeros(0, np.int64)
                                                  for parts in (positions, kinds, depths))
        if len(self.depth) and (self.depth.min() < 0 or depth_before != 0):
            raise _NotUnderstood

    def levels(self) -> int:
        """How many lists and objects deep the text nests (an opening bracket's depth counts the ones around it)."""
        openers = _STEP[self.kinds] == 1
        return int(self.depth[openers].max()) + 1 if openers.any() else 0

    def value(self, start: int, end: int):
        """The JSON value in data[start:end] (surrounding whitespace allowed)."""
        if end - start <= self.piece_bytes:
            return json.loads(self.data[start:end])
        first, last = np.searchsorted(self.positions, [start, end])
        if first == last:  # a long string or number: no structure to cut at
            return json.loads(self.data[start:end])
        opener, closer = self.positions[first], self.positions[last - 1]
        if self.data[start:opener].strip() or self.data[closer + 1:end].strip() or self.kinds[first] not in _OPENERS:
            raise _NotUnderstood
        inner = self.depth[first] + 1
        commas = self.positions[first:last][(self.kinds[first:last] == _COMMA) & (self.depth[first:last] == inner)]
        bounds = np.empty(len(commas) + 2, np.int64)  # element i is data[bounds[i]:bounds[i+1]-1]
        bounds[0], bounds[1:-1], bounds[-1] = opener + 1, commas + 1, closer + 1
        if self.kinds[first] == ord("["):
            return self._array(bounds)
        return self._object(bounds, first, last, inner)

    def _array(self, bounds: np.ndarray) -> list:
        last = len(bounds) - 1
        if last == 1 and not self.data[bounds[0]:bounds[1] - 1].strip():  # no comma, only whitespace: []
            return []
        items, i = [None] * last, 0  # filled in place: a list grown by extend is copied whole as it grows
        while i < last:  # elements i..j-1: as many whole elements as fit in a piece
            # bisect, not np.searchsorted: NumPy lets the GIL go and takes it back at once, so often that a thread
            # waiting for it never gets it (the loop then froze the others for the whole parse, measured)
            j = max(i + 1, bisect.bisect_right(bounds, bounds[i] + self.piece_bytes) - 1)
            if j == i + 1 and bounds[j] - bounds[i] > self.piece_bytes:  # one large element: cut it in turn
                items[i] = self.value(int(bounds[i]), int(bounds[j]) - 1)
            else:
                piece = json.loads(b"[" + self.data[bounds[i]:bounds[j] - 1] + b"]")
                if len(piece) != j - i:  # a comma the scan misplaced (invalid JSON): parsed whole instead
                    raise _NotUnderstood
                items[i:j] = piece
            i = j
        return items

    def _object(self, bounds: np.ndarray, first: int, last: int, inner: int) -> dict:
        colons = self.positions[first:last][(self.kinds[first:last] == _COLON) & (self.depth[first:last] == inner)]
        if len(colons) != len(bounds) - 1:
            raise _NotUnderstood
        members = {}
        for start, end, colon in zip(bounds[:-1].tolist(), bounds[1:].tolist(), colons.tolist()):
            key = json.loads(self.data[start:colon])
            if not isinstance(key, str) or not start < colon < end - 1:
                raise _NotUnderstood
            members[key] = self.value(colon + 1, end - 1)
        return members


def dumps(value, items_per_piece: int = 4096) -> bytes:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))` as UTF-8 (the server's JSON answers), a long
    list a slice at a time: one call for a 50,000-row answer holds the GIL as long as parsing a large body does."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def render(item) -> str:
        if isinstance(item, dict) and all(isinstance(k, str) for k in item) and any(
                isinstance(v, (list, dict)) for v in item.values()):
            return "{" + ",".join(f"{encode(key)}:{render(v)}" for key, v in item.items()) + "}"
        if isinstance(item, list) and item:
            step = _slice_length(item, items_per_piece)
            if len(item) > step:
                return "[" + ",".join(encode(item[i:i + step])[1:-1] for i in range(0, len(item), step)) + "]"
        return encode(item)

    return render(value).encode("utf-8")


def release(value, items_per_piece: int = 16384) -> None:
    """Empty the lists of a parsed body a slice at a time, the top-level ones and those in its objects (a request's
    "instances", its inputs): freeing two million strings at once holds the GIL for about 25 ms."""
    if isinstance(value, dict):
        for item in value.values():
            if isinstance(item, (dict, list)):
                release(item, items_per_piece)
    elif isinstance(value, list) and value:
        step = _slice_length(value, items_per_piece)
        while value:
            del value[-step:]


def _slice_length(items: list, items_per_piece: int) -> int:
    """How many of a list's elements make a slice of about `items_per_piece` values: fewer when its elements are
    themselves lists or objects (rows of token ids), judged by the first."""
    first = items[0]
    return max(1, items_per_piece // max(len(first) if isinstance(first, (list, dict)) else 1, 1))
