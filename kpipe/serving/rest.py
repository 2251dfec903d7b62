"""TensorFlow Serving's REST formats (https://www.tensorflow.org/tfx/serving/api_rest), checked against a signature.

Request, row format:      {"signature_name": "...", "instances": [row, row, ...]}
    a row is the value of the only input, or {"input name": value, ...} when there are several.
Request, columnar format: {"signature_name": "...", "inputs": value or {"input name": value, ...}}
Response: {"predictions": [...]} to a row request (a row per instance: the value of the only output,
or {"output name": value, ...}); {"outputs": value or {"output name": value, ...}} to a columnar one.
Strings are JSON strings (or {"b64": "..."} for bytes); a string output that is not UTF-8 is
returned as {"b64": "..."}, as TF Serving does.

Every check happens before a request joins a batch, so one bad request cannot fail another.
"""

from __future__ import annotations

import base64
import binascii
import json

import numpy as np

from kpipe.serving import json_pieces
from kpipe.serving.signatures import Signature, TensorInfo


class BadRequest(Exception):
    """The request cannot be answered as sent (HTTP 400); the message says what to change."""


class TooLarge(Exception):
    """The request asks for more work than the server answers in one request (HTTP 413)."""


# No input of any signature is nested deeper than this (a rank-3 input is 4 levels in the row format).
MAX_DEPTH = 32
TOO_DEEP = f"the request is nested more than {MAX_DEPTH} levels deep; no signature takes such values"


def listed_strings(body: bytes) -> int:
    """About how many JSON strings a body holds, counted without parsing it (so a 50,000-row body is known as bulk
    before its parse, which costs as much as answering a small request): every string is two quotes that no
    backslash escapes, whatever separates the strings (`","`, `", "`, `",\n"`, ...). A string ending in an escaped
    backslash (`"a\\"`) counts half: a lower bound, never fooled by the layout of the body. About a request's rows
    of texts (more for rows of named inputs: their keys count too)."""
    return (body.count(b'"') - body.count(b'\\"')) // 2


def parse_body(body: bytes) -> dict:
    """The JSON object of a request body."""
    try:
        json_pieces.check_utf8(body)
    except UnicodeDecodeError as error:
        raise BadRequest(f"the request body is not valid UTF-8 (byte {error.start}); send JSON encoded as UTF-8, "
                         "with bytes as {\"b64\": \"...\"}") from None
    try:
        request = json_pieces.loads(body, max_depth=MAX_DEPTH)  # a large body in pieces: no call holds the GIL long
    except json.JSONDecodeError as error:
        raise BadRequest(f"the request body is not valid JSON: {error.msg} at line {error.lineno} column "
                         f"{error.colno}") from None
    except (RecursionError, json_pieces.TooDeep):
        raise BadRequest(TOO_DEEP) from None
    except ValueError as error:  # an integer of more than 4,300 digits (CPython's int/str limit), not JSON's error
        raise BadRequest(f"the request body holds a number Python will not read: {str(error)[:120]}") from None
    if not isinstance(request, dict):
        raise BadRequest('the request must be a JSON object such as {"instances": [...]} or {"inputs": ...}')
    return request


def signature_name(request: dict) -> str:
    name = request.get("signature_name", "serving_default")
    if not isinstance(name, str):
        raise BadRequest("signature_name must be a string")
    return name or "serving_default"


def request_inputs(request: dict, signature: Signature) -> tuple[dict[str, np.ndarray], bool]:
    """The signature's inputs as arrays, and whether the request was in the row format.

    Raises:
        BadRequest: both or neither format, a missing or unknown input, a wrong type or shape.
    """
    unknown = sorted(set(request) - {"signature_name", "instances", "inputs"})
    if unknown:
        raise BadRequest(f"unknown request field '{unknown[0]}': send \"instances\" (row format) or \"inputs\" "
                         "(columnar format), and optionally \"signature_name\"")
    if ("instances" in request) == ("inputs" in request):
        raise BadRequest('send exactly one of "instances" (row format) or "inputs" (columnar format)')
    names = list(signature.inputs)
    if "instances" in request:
        columns = _columns_of_rows(request["instances"], signature)
    else:
        value = request["inputs"]
        named = isinstance(value, dict) and set(value) != {"b64"}
        if not named and len(names) > 1:
            raise BadRequest(f"this signature has several inputs ({', '.join(names)}): send \"inputs\" as an "
                             "object with one value per input")
        columns = value if named else {names[0]: value}
    _check_names(columns, signature)
    arrays = {name: to_array(columns[name], signature.inputs[name]) for name in names}
    if signature.batched:
        sizes = {len(array) for array in arrays.values()}
        if len(sizes) > 1:
            raise BadRequest("every input must have the same number of rows (the batch size); got " +
                             ", ".join(f"{name}: {len(array)}" for name, array in arrays.items()))
    return arrays, "instances" in request


def rows_asked(arrays: dict[str, np.ndarray], signature: Signature) -> int:
    """How many rows a request asks for: its batch size, or for a signature of single values, its integer
    `count` input (a generator's number of names), else 1."""
    if signature.batched:
        return len(next(iter(arrays.values())))
    count = arrays.get("count")
    if count is not None and count.ndim == 0 and count.dtype.kind in "iu":
        return int(count)
    return 1


def check_listed_rows(request: dict, signature: Signature, limit: int) -> None:
    """TooLarge for a batched request that lists more than `limit` rows, before any conversion (turning 50,000
    rows into arrays only to refuse them would cost more than answering a small request)."""
    if not signature.batched:
        return
    value = request.get("instances", request.get("inputs"))
    if isinstance(value, dict) and set(value) != {"b64"}:
        value = next(iter(value.values()), None)
    if isinstance(value, list) and len(value) > limit:
        raise _too_many(len(value), "rows (instances)", limit)


def check_text_sizes(arrays: dict[str, np.ndarray], limit: int) -> None:
    """TooLarge when one text is longer than `limit` bytes (a text model's work and memory grow with it)."""
    for name, array in arrays.items():
        if array.dtype == object and array.size:
            longest = max(map(len, array.reshape(-1)))
            if longest > limit:
                raise TooLarge(f"input '{name}' holds a text of {longest} bytes; this server takes texts of at "
                               f"most {limit} bytes (--max-text-kb): shorten or split it")


def check_rows(arrays: dict[str, np.ndarray], signature: Signature, limit: int) -> None:
    """Raises TooLarge when the request asks for more than `limit` rows."""
    rows = rows_asked(arrays, signature)
    if rows > limit:
        raise _too_many(rows, "rows (instances)" if signature.batched else "count", limit)


def _too_many(rows: int, what: str, limit: int) -> TooLarge:
    return TooLarge(f"the request asks for {rows} {what}; this server answers at most {limit} per request "
                    "(--max-rows-per-request): split it into several requests")


def _columns_of_rows(instances, signature: Signature) -> dict[str, list]:
    if not signature.batched:
        inputs = ", ".join(signature.inputs)
        raise BadRequest(f"this signature takes single values ({inputs}), not rows: send them in the columnar "
                         f"format, {{\"inputs\": {{{', '.join(f'{json.dumps(n)}: ...' for n in signature.inputs)}}}}}")
    if not isinstance(instances, list) or not instances:
        raise BadRequest('"instances" must be a non-empty list of rows')
    names = list(signature.inputs)
    if len(names) == 1 and not (isinstance(instances[0], dict) and set(instances[0]) == set(names)):
        return {names[0]: instances}
    if not all(isinstance(row, dict) for row in instances):
        raise BadRequest(f"this signature has several inputs ({', '.join(names)}): each instance must be an object "
                         "with one value per input")
    for row in instances:
        _check_names(row, signature)
    return {name: [row[name] for row in instances] for name in names}


def _check_names(columns: dict, signature: Signature) -> None:
    expected = ", ".join(info.describe() for info in signature.inputs.values())
    unknown = sorted(set(columns) - set(signature.inputs))
    if unknown:
        raise BadRequest(f"unknown input '{unknown[0]}'; this signature takes {expected}")
    missing = [name for name in signature.inputs if name not in columns]
    if missing:
        raise BadRequest(f"missing input '{missing[0]}'; this signature takes {expected}")


def to_array(value, info: TensorInfo) -> np.ndarray:
    """A JSON value as an array of the input's dtype and shape; BadRequest naming the input if it is neither."""
    if info.is_string:
        array = np.array(_decode_strings(value, info), dtype=object)
        if array.dtype != object or any(not isinstance(x, bytes) for x in array.reshape(-1)):
            raise BadRequest(f"input '{info.name}' must hold strings: {_rows_hint(info)}")
    else:
        try:
            array = np.asarray(value)
        except ValueError:
            raise BadRequest(f"input '{info.name}' has rows of different lengths: {_rows_hint(info)}") from None
        kind = info.kind  # f, i, u or b (others are refused)
        allowed = {"f": "iuf", "i": "iu", "u": "iu", "b": "b"}.get(kind, "")
        if array.dtype == object and kind in "iu" and all(isinstance(x, int) for x in array.reshape(-1)):
            raise _out_of_range(info, max(array.reshape(-1), key=abs))  # beyond 64 bits: kept as Python ints
        if array.dtype.kind not in allowed or array.dtype == object:
            what = {"f": "numbers", "i": "integers", "u": "integers", "b": "true/false"}.get(kind, info.dtype_name)
            raise BadRequest(f"input '{info.name}' must hold {what}: {_rows_hint(info)}")
        if kind in "iu" and array.dtype.kind == "f":
            raise BadRequest(f"input '{info.name}' must hold integers: {_rows_hint(info)}")
        if kind in "iu" and array.size:  # a value outside would wrap around silently in astype
            limits = np.iinfo(info.dtype)
            if array.max() > limits.max:
                raise _out_of_range(info, array.max())
            if array.min() < limits.min:
                raise _out_of_range(info, array.min())
        array = array.astype(info.dtype)
        if kind == "f" and not np.isfinite(array).all():
            raise BadRequest(f"input '{info.name}' holds NaN or infinity; send finite numbers (fill gaps first)")
    if array.ndim != info.rank or any(d is not None and d != n for d, n in zip(info.shape, array.shape)):
        raise BadRequest(f"input '{info.name}' has shape {list(array.shape)}; this signature takes {_rows_hint(info)}")
    return array


def _out_of_range(info: TensorInfo, value) -> BadRequest:
    limits = np.iinfo(info.dtype)
    return BadRequest(f"input '{info.name}' holds {value}, outside {info.dtype.name}'s range "
                      f"[{limits.min}, {limits.max}]")


def _decode_strings(value, info: TensorInfo):
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and set(value) == {"b64"}:
        try:
            return base64.b64decode(value["b64"], validate=True)
        except (binascii.Error, TypeError):
            raise BadRequest(f"input '{info.name}': a {{\"b64\": ...}} value is not valid base64") from None
    if isinstance(value, list):
        return [_decode_strings(item, info) for item in value]
    return value  # anything else: rejected by the caller's type check


def _rows_hint(info: TensorInfo) -> str:
    return info.describe() + (" (None: any size; the first axis is the rows)" if info.rank and info.shape[0] is None
                              else "")


def to_json(array: np.ndarray):
    """An output array as JSON values: numbers, and strings (UTF-8, else {"b64": ...})."""
    if array.dtype == object or array.dtype.kind == "S":
        return _strings(array.tolist())
    return array.tolist()


def _strings(value):
    if isinstance(value, list):
        return [_strings(item) for item in value]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def response(outputs: dict[str, np.ndarray], rows: bool) -> dict:
    """The response body: {"predictions": [...]} to a row request, {"outputs": ...} to a columnar one."""
    values = {name: to_json(array) for name, array in outputs.items()}
    if not rows:
        return {"outputs": next(iter(values.values())) if len(values) == 1 else values}
    if len(values) == 1:
        return {"predictions": next(iter(values.values()))}
    count = len(next(iter(values.values())))
    return {"predictions": [{name: value[i] for name, value in values.items()} for i in range(count)]}
