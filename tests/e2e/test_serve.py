"""`kpipe serve`: real HTTP requests to a real server process on 127.0.0.1, answers checked against the
SavedModel loaded with plain TensorFlow; TF Serving's request formats, bad requests, micro-batching,
a new version published while serving, and start-up failures. The other tasks' exports are served
in their own end-to-end files (translate, generate, forecast, word2vec, transformer embed)."""

import json
import os
import shutil
import time
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.helpers import wait_for
from tests.servers import served, served_in_thread

pytestmark = pytest.mark.slow

TEXTS = ["@united thank you so much, great crew!", "worst delay ever, lost my bag", "", "ok flight I guess"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, shared_run):
    # the tests publish versions beside it
    return shared_run("sentiment-bilstm").copy_to(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(trained):
    with served("sentiment-bilstm", "--max-request-mb", "1", "--batch-timeout-ms", "20", "--poll-seconds", "0.5",
                cwd=trained) as running:
        yield running


def reference(export, texts):
    """The export's answers from plain TensorFlow, one call."""
    out = tf.saved_model.load(str(export)).signatures["serving_default"](text=tf.constant(texts))
    return [label.decode() for label in out["label"].numpy()], out["probabilities"].numpy()


def test_row_and_columnar_formats_answer_as_the_savedmodel_does(trained, server):
    labels, probabilities = reference(trained / "saved_models" / "sentiment-bilstm" / "1", TEXTS)

    status, body = server.post("/v1/models/sentiment-bilstm:predict", {"instances": TEXTS})
    assert status == 200, body
    assert [row["label"] for row in body["predictions"]] == labels
    np.testing.assert_allclose([row["probabilities"] for row in body["predictions"]], probabilities, atol=1e-5)
    assert [row["label_id"] for row in body["predictions"]] == list(probabilities.argmax(axis=1))

    status, body = server.post("/v1/models/sentiment-bilstm/versions/1:predict",
                               {"signature_name": "serving_default", "inputs": {"text": TEXTS}})
    assert status == 200, body
    assert body["outputs"]["label"] == labels
    np.testing.assert_allclose(body["outputs"]["probabilities"], probabilities, atol=1e-5)

    status, body = server.post("/v1/models/sentiment-bilstm:predict", {"instances": [{"text": TEXTS[0]}]})
    assert (status, body["predictions"][0]["label"]) == (200, labels[0])  # rows may name their input
    status, body = server.post("/v1/models/sentiment-bilstm:predict",
                               {"inputs": [{"b64": "Z3JlYXQgY3JldyE="}]})  # bytes of "great crew!" as base64
    assert status == 200 and body["outputs"]["label"] == reference(
        trained / "saved_models" / "sentiment-bilstm" / "1", ["great crew!"])[0]


def test_status_metadata_and_listing(server):
    status, body = server.get("/v1/models/sentiment-bilstm")
    assert (status, body) == (200, {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]})
    status, body = server.get("/v1/models/sentiment-bilstm/versions/1/metadata")
    assert status == 200 and body["model_spec"] == {"name": "sentiment-bilstm", "signature_name": "",
                                                    "version": "1"}
    default = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert default["inputs"]["text"]["dtype"] == "DT_STRING"
    assert default["inputs"]["text"]["tensor_shape"]["dim"] == [{"size": "-1", "name": ""}]
    assert default["outputs"]["probabilities"]["tensor_shape"]["dim"] == [{"size": "-1", "name": ""},
                                                                          {"size": "3", "name": ""}]
    assert {default["outputs"][k]["dtype"] for k in ("label", "label_id", "probabilities")} == {
        "DT_STRING", "DT_INT64", "DT_FLOAT"}
    status, body = server.get("/v1/models")
    [model] = body["models"]
    assert (model["name"], model["task"], model["pipeline"]) == ("sentiment-bilstm", "classify", "sentiment-bilstm")
    assert str(trained) not in json.dumps(body)  # where the exports live is not the clients' business


BAD_REQUESTS = {
    "malformed JSON": ('{"instances": ["a"', 400, "not valid JSON"),
    "not UTF-8": (b'{"instances": ["caf\xe9"]}', 400, "not valid UTF-8"),
    "not an object": ('["a"]', 400, "must be a JSON object"),
    "neither format": ({"texts": ["a"]}, 400, "unknown request field 'texts'"),
    "both formats": ({"instances": ["a"], "inputs": ["a"]}, 400, "exactly one of"),
    "wrong input name": ({"inputs": {"txt": ["a"]}}, 400, "unknown input 'txt'; this signature takes text: "
                                                          "string[None]"),
    "wrong type": ({"instances": [1, 2]}, 400, "input 'text' must hold strings"),
    "wrong shape": ({"instances": [["a", "b"]]}, 400, "input 'text' has shape [1, 2]"),
    "empty instances": ({"instances": []}, 400, "non-empty list"),
    "bad base64": ({"inputs": [{"b64": "%%%"}]}, 400, "not valid base64"),
    "unknown signature": ({"signature_name": "nope", "instances": ["a"]}, 400, "no signature 'nope'; it has: "
                                                                               "serve, serving_default"),
    "deeply nested": ('{"instances": ' + "[" * 50_000 + "]" * 50_000 + "}", 400, "nested more than 32 levels"),
}


@pytest.mark.parametrize("case", BAD_REQUESTS)
def test_bad_requests_get_a_json_400_and_the_server_keeps_serving(server, case):
    body, expected_status, message = BAD_REQUESTS[case]
    status, reply = server.post("/v1/models/sentiment-bilstm:predict", body)
    assert status == expected_status and message in reply["error"], reply
    status, reply = server.post("/v1/models/sentiment-bilstm:predict", {"instances": ["still there?"]})
    assert status == 200 and len(reply["predictions"]) == 1


@pytest.mark.parametrize("method, path, expected_status, message", [
    ("POST", "/v1/models/nope:predict", 404, "no model named 'nope' is served here (served: sentiment-bilstm)"),
    ("POST", "/v1/models/sentiment-bilstm/versions/9:predict", 404, "version 9 of model 'sentiment-bilstm' is not"),
    ("GET", "/v1/models/..%2F..%2Fsaved_models%2Fsentiment-bilstm/metadata", 404, "unknown path"),
    ("GET", "/v1/models/%2E%2E/metadata", 404, "no model named '..'"),
    ("GET", "/etc/passwd", 404, "Not Found"),
    ("GET", "/v1/models/sentiment-bilstm:predict", 405, "needs POST"),
])
def test_unknown_models_versions_and_paths_are_404(server, method, path, expected_status, message):
    status, reply = server.request(method, path, {"instances": ["a"]} if method == "POST" else None)
    assert status == expected_status and message in reply["error"], reply


def test_a_body_over_the_limit_is_413(server):
    big = {"instances": ["word " * 250_000]}  # 1.25 MB of text, over --max-request-mb 1
    status, reply = server.post("/v1/models/sentiment-bilstm:predict", big)
    assert status == 413 and "over the limit of 1048576 bytes" in reply["error"], reply
    status, _ = server.post("/v1/models/sentiment-bilstm:predict", {"instances": ["word " * 1000]})
    assert status == 200


def test_work_per_request_is_bounded_and_slow_clients_are_cut_off(trained):
    import http.client

    with served_in_thread("sentiment-bilstm", "--max-batch-size", "4", "--max-rows-per-request", "12",
                          "--body-timeout-s", "1", "--header-timeout-s", "1", "--write-timeout-s", "1",
                          cwd=trained) as limited:
        texts = [f"{TEXTS[i % 4]} {i}" for i in range(12)]
        labels, probabilities = reference(trained / "saved_models" / "sentiment-bilstm" / "1", texts)
        before = limited.get("/v1/models")[1]["models"][0]["model_calls"]
        status, body = limited.post("/v1/models/sentiment-bilstm:predict", {"instances": texts})
        assert status == 200 and [row["label"] for row in body["predictions"]] == labels
        np.testing.assert_allclose([row["probabilities"] for row in body["predictions"]], probabilities, atol=1e-5)
        assert limited.get("/v1/models")[1]["models"][0]["model_calls"] - before == 3  # 12 rows in calls of 4
        status, body = limited.post("/v1/models/sentiment-bilstm:predict", {"instances": texts + ["one more"]})
        assert status == 413 and "asks for 13 rows" in body["error"] and "--max-rows-per-request" in body["error"]

        # A body that stops arriving: 408 after --body-timeout-s, and the server goes on.
        slow = http.client.HTTPConnection("127.0.0.1", limited.port, timeout=30)
        slow.putrequest("POST", "/v1/models/sentiment-bilstm:predict")
        slow.putheader("Content-Length", "1000")
        slow.endheaders(b'{"instances": ["a')
        started = time.monotonic()
        reply = slow.getresponse()
        assert reply.status == 408 and "did not arrive within 1 s" in json.loads(reply.read())["error"]
        assert time.monotonic() - started < 10
        slow.close()

        # Headers that never end: the connection is closed after --header-timeout-s.
        import socket

        with socket.create_connection(("127.0.0.1", limited.port), timeout=30) as loris:
            loris.sendall(b"POST /v1/models/sentiment-bilstm:predict HTTP/1.1\r\nHost: x\r\n")
            started = time.monotonic()
            assert loris.recv(1024) == b""  # closed by the server, not by our 30 s timeout
            assert time.monotonic() - started < 10

        # Reliability review round 5, finding 3: an endless URL or header value is answered 431 once past 64 KiB,
        # before the parser buffers more (it used to buffer all of it, quadratically, on the event loop).
        for opening in (b"GET /v1/models/" , b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Long: "):
            with socket.create_connection(("127.0.0.1", limited.port), timeout=30) as endless:
                endless.sendall(opening)
                sent, answer = 0, b""
                try:
                    while sent < 4 << 20 and not answer:
                        endless.sendall(b"a" * 16384)
                        sent += 16384
                        endless.settimeout(0.001)
                        try:
                            answer = endless.recv(4096)
                        except (BlockingIOError, socket.timeout):
                            pass
                        endless.settimeout(30)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                if not answer:
                    endless.settimeout(5)
                    answer = endless.recv(4096)
                assert answer.startswith(b"HTTP/1.1 431") and sent < 1 << 20, (answer[:80], sent)

        # Finding 4: a client that pipelines requests and never reads their answers is dropped after
        # --write-timeout-s (it used to hold its connection, and a slot of --limit-concurrency, forever).
        import threading

        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", limited.port))
        request = b"GET /v1/models/sentiment-bilstm/metadata HTTP/1.1\r\nHost: x\r\n\r\n"

        def flood():
            try:
                reader.sendall(request * 20000)
            except OSError:
                pass
        threading.Thread(target=flood, daemon=True).start()
        # The buffers between us fill, the server's writes pause, its 1 s timer runs out. Waited for, not slept for
        # (a loaded machine fills them later): the answers waiting unread here (FIONREAD; reading nothing) must stop
        # growing for 4 s, well past the server's pause and its timer.
        import array
        import fcntl
        import termios

        def unread() -> int:
            count = array.array("i", [0])
            fcntl.ioctl(reader, termios.FIONREAD, count)
            return count[0]

        last, stable_since, deadline = -1, time.monotonic(), time.monotonic() + 60
        while time.monotonic() < deadline:
            now = unread()
            if now != last:
                last, stable_since = now, time.monotonic()
            elif last > 0 and time.monotonic() - stable_since > 4:
                break
            time.sleep(0.1)
        reader.settimeout(2)
        received, dropped, deadline = 0, False, time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                chunk = reader.recv(1 << 16)
            except ConnectionResetError:
                dropped = True
                break
            except socket.timeout:
                break
            if not chunk:
                dropped = True
                break
            received += len(chunk)
        reader.close()
        assert dropped, f"still connected after reading {received} bytes"
        assert limited.post("/v1/models/sentiment-bilstm:predict", {"instances": ["still there?"]})[0] == 200


def concurrent_answers(server, texts, clients=16):
    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(lambda t: server.post("/v1/models/sentiment-bilstm:predict", {"instances": [t]}),
                             texts))


def test_concurrent_requests_share_model_calls_and_each_gets_its_own_answer(trained, server):
    texts = [f"{TEXTS[i % 4]} {i}" for i in range(64)]
    labels, probabilities = reference(trained / "saved_models" / "sentiment-bilstm" / "1", texts)
    before = server.get("/v1/models")[1]["models"][0]
    answers = concurrent_answers(server, texts)
    after = server.get("/v1/models")[1]["models"][0]
    assert all(status == 200 for status, _ in answers)
    assert [body["predictions"][0]["label"] for _, body in answers] == labels
    np.testing.assert_allclose([body["predictions"][0]["probabilities"] for _, body in answers], probabilities,
                               atol=1e-5)
    requests, calls = after["requests"] - before["requests"], after["model_calls"] - before["model_calls"]
    assert requests == 64 and calls < 32, (requests, calls)  # 16 clients, 20 ms to gather: a few calls serve all


def test_without_batching_every_request_is_one_call(trained):
    with served_in_thread("sentiment-bilstm", "--no-batching", cwd=trained) as plain:  # the module server is a process
        answers = concurrent_answers(plain, [f"text {i}" for i in range(32)])
        assert all(status == 200 for status, _ in answers)
        model = plain.get("/v1/models")[1]["models"][0]
        assert (model["requests"], model["model_calls"]) == (32, 32)


def test_a_version_published_while_serving_is_picked_up(trained, server, shared_run):
    from kpipe.exports.versions import write_version

    # published as kpipe run publishes (written aside, renamed into place); another model (the session's n-gram
    # run), so its answers tell the versions apart
    other = shared_run("sentiment-bigrams").folder / "saved_models" / "sentiment-bigrams" / "1"
    write_version(trained / "saved_models" / "sentiment-bilstm",
                  lambda tmp: shutil.copytree(other, tmp, dirs_exist_ok=True))
    assert wait_for(lambda: server.get("/v1/models/sentiment-bilstm")[1]["model_version_status"][0]["version"]
                    == "2", timeout=60)
    labels, probabilities = reference(trained / "saved_models" / "sentiment-bilstm" / "2", TEXTS)
    status, body = server.post("/v1/models/sentiment-bilstm/versions/2:predict", {"inputs": TEXTS})
    assert status == 200 and body["outputs"]["label"] == labels
    np.testing.assert_allclose(body["outputs"]["probabilities"], probabilities, atol=1e-5)
    assert not np.allclose(probabilities, reference(trained / "saved_models" / "sentiment-bilstm" / "1", TEXTS)[1],
                           atol=1e-3)  # the new version's answers, not the old one's
    status, body = server.post("/v1/models/sentiment-bilstm/versions/1:predict", {"inputs": TEXTS})
    assert status == 404 and "serving version 2" in body["error"]


def test_a_version_that_does_not_load_leaves_the_served_one_serving(trained, server):
    versions = trained / "saved_models" / "sentiment-bilstm"
    served_version = server.get("/v1/models/sentiment-bilstm")[1]["model_version_status"][0]["version"]
    broken = versions / ".tmp-broken"
    shutil.copytree(versions / served_version, broken)
    (broken / "saved_model.pb").write_bytes(b"not a SavedModel")
    broken.rename(versions / "9")  # published in one rename, as kpipe run does
    assert wait_for(lambda: any("keeping version" in line for line in server.lines), timeout=30), server.lines[-5:]
    assert server.get("/v1/models/sentiment-bilstm")[1]["model_version_status"][0]["version"] == served_version
    status, body = server.post("/v1/models/sentiment-bilstm:predict", {"instances": ["still serving?"]})
    assert status == 200 and len(body["predictions"]) == 1
    shutil.rmtree(versions / "9")


def startup_failure(*args, cwd):
    """stderr's one line from `kpipe serve ARGS` in a fresh process, run as a user would (TensorFlow's log level
    not set): TensorFlow's own start-up lines must not reach the user."""
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    run = subprocess.run([sys.executable, "-m", "kpipe", "serve", *args], cwd=cwd, capture_output=True, text=True,
                         timeout=300, env=env)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    return lines[0]


def test_a_savedmodel_that_does_not_load_is_one_line_exit_2_in_a_fresh_process(trained, tmp_path):
    broken = tmp_path / "broken" / "1"
    shutil.copytree(trained / "saved_models" / "sentiment-bilstm" / "1", broken)
    (broken / "saved_model.pb").write_bytes(b"not a SavedModel")
    assert startup_failure(str(broken), cwd=trained).startswith(
        f"kpipe: error: cannot load the SavedModel in {broken}")


@pytest.mark.parametrize("args, message, whole_line", [
    (["nope"], "kpipe: error: no exported model at 'nope'", False),
    (["a:b=sentiment-bilstm"], "kpipe: error: cannot serve 'a:b=sentiment-bilstm' under the name 'a:b': name it "
                               "with NAME=WHERE (letters, digits, '-', '_', '.')", True),
    (["sentiment-bilstm", "--max-batch-size", "0"], "kpipe: error: --max-batch-size must be at least 1, "
     "--batch-timeout-ms at least 0, --max-request-mb and --poll-seconds above 0", True),
    (["sentiment-bilstm", "--header-timeout-s", "0"], "kpipe: error: --max-rows-per-request must be at least 0 (0: "
     "4 x --max-batch-size), --limit-concurrency at least 1, --header-timeout-s, --body-timeout-s, --write-timeout-s, "
     "--max-text-kb and --max-batch-kb above 0", True),
    (["sentiment-bilstm", "--max-bodies-mb", "8"], "kpipe: error: --max-bodies-mb 8 is below --max-request-mb 16: no "
     "request of the largest size could ever be read; raise it (or 0: 4 x --max-request-mb)", True),
    (["sentiment-bilstm", "saved_models/sentiment-bilstm/1"], "kpipe: error: two models would be served as "
                                                              "'sentiment-bilstm'", False),
])
def test_startup_mistakes_are_one_line_exit_2(trained, args, message, whole_line, monkeypatch, capsys):
    monkeypatch.chdir(trained)  # in-process: the fresh-process case is the test above
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and (err[0] == message if whole_line else err[0].startswith(message)), err


def test_a_port_in_use_is_one_line_exit_2(trained, monkeypatch, capsys):
    monkeypatch.chdir(trained)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "sentiment-bilstm", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"cannot listen on 127.0.0.1:{port}" in err[0], err
