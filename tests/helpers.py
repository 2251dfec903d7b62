"""What many test files share, in one place: the `kpipe` command in a subprocess, tiny pretrained
checkpoints, synthetic data, a real `kpipe serve` and two-worker clusters. Importing it does not load
TensorFlow (test collection stays fast); the helpers that need it import it when called.

No test touches the network: checkpoints are written here, in keras-hub's preset format and in
Hugging Face's, from a tiny BERT with random weights.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

# Any download a subprocess tries goes to a closed port and fails at once, even on a machine with internet.
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}


def kpipe(*args, cwd, timeout=600, env=None) -> subprocess.CompletedProcess:
    """Run `python -m kpipe ARGS` in `cwd` as a user would, in `env` (default: this process's environment)."""
    return subprocess.run([sys.executable, "-m", "kpipe", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def kpipe_reporting_tensorflow(*args, cwd, env=None, timeout=120) -> subprocess.CompletedProcess:
    """`kpipe ARGS` in a fresh process whose stdout is then "True" or "False": whether TensorFlow had been
    imported when the command returned (mistakes caught before it loads leave it "False")."""
    script = ("import sys\nfrom kpipe.cli.commands import main\ncode = main(sys.argv[1:])\n"
              "print('tensorflow' in sys.modules)\nsys.exit(code)\n")
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def kpipe_in_process(*args, cwd) -> tuple[int, str]:
    """`kpipe ARGS` run by `main` in this process, in `cwd`: its exit code and what it printed (its log lines
    go to the test's stderr). For fixtures that only need a run's result (each command keeps its own subprocess
    tests; a fresh process costs a TensorFlow start-up); a module fixture cannot use monkeypatch."""
    from kpipe.cli.commands import main

    printed = io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(printed):
        code = main(list(args))
    return code, printed.getvalue()


def new_user_env(env=None) -> dict:
    """`env` (default: this process's) as a new user has it: without the tests' TF_CPP_MIN_LOG_LEVEL."""
    return {k: v for k, v in (env or os.environ).items() if k != "TF_CPP_MIN_LOG_LEVEL"}


# === Tiny BERT checkpoints ===

WORDS = ("good great fine lovely superb wonderful bad awful poor terrible boring dreadful the a movie film plot "
         "actor scene it was and flight crew thanks delay").split()
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"),
              *(c for c in "abcdefghijklmnopqrstuvwxyz" if c not in WORDS)]


def tiny_backbone(seed: int = 0):
    """A 2-layer BERT, hidden size 16, over VOCABULARY, with random weights."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    return keras_hub.models.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
                                         intermediate_dim=32, max_sequence_length=64, dropout=0.0)


def write_keras_hub_preset(folder: Path, seed: int = 0):
    """A keras-hub preset folder (config.json, metadata.json, weights, tokenizer); returns its backbone."""
    import keras_hub

    backbone = tiny_backbone(seed)
    backbone.save_to_preset(str(folder))
    keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(str(folder))
    return backbone


def write_distil_bert_preset(folder: Path, seed: int = 0):
    """A keras-hub DistilBERT preset (no segment ids), hidden size 16, over VOCABULARY; returns its backbone."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.DistilBertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2,
                                                   hidden_dim=16, intermediate_dim=32, max_sequence_length=64)
    backbone.save_to_preset(str(folder))
    keras_hub.models.DistilBertTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(str(folder))
    return backbone


def write_electra_preset(folder: Path, seed: int = 0):
    """A keras-hub ELECTRA preset, hidden size 16, over VOCABULARY: a family keras-hub 0.32 has a backbone and a
    tokenizer for but no classifier preprocessor; returns its backbone."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.ElectraBackbone(vocab_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
                                                embedding_dim=16, intermediate_dim=32, max_sequence_length=64)
    backbone.save_to_preset(str(folder))
    keras_hub.models.ElectraTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(str(folder))
    return backbone


def write_deberta_v3_preset(folder: Path, seed: int = 0):
    """A keras-hub DeBERTa-v3 preset (a SentencePiece word model trained here on WORDS; no segment ids),
    hidden size 16; returns its backbone."""
    import keras
    import keras_hub
    import sentencepiece  # keras-hub's own dependency

    proto = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([" ".join(WORDS[i:i + 5]) for i in range(len(WORDS))] * 5), model_writer=proto,
        vocab_size=len(WORDS) + 4, model_type="WORD", pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]",
        bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]", user_defined_symbols="[MASK]", minloglevel=2)
    tokenizer = keras_hub.models.DebertaV3Tokenizer(proto=proto.getvalue())
    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.DebertaV3Backbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=2,
                                                  num_heads=2, hidden_dim=16, intermediate_dim=32,
                                                  max_sequence_length=64, bucket_size=8)
    backbone.save_to_preset(str(folder))
    tokenizer.save_to_preset(str(folder))
    return backbone


def write_roberta_preset(folder: Path, seed: int = 0):
    """A keras-hub RoBERTa preset (byte-pair tokenizer, <s> </s> <pad>), hidden size 16; returns its backbone."""
    import keras
    import keras_hub

    letters = "abcdefghijklmnopqrstuvwxyz"
    tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "\u0120", *letters, *(f"\u0120{c}" for c in letters),
              "go", "od", "\u0120go", "\u0120good"]
    merges = ["g o", "o d", "\u0120 g", "\u0120g o", "\u0120go od"]
    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.RobertaBackbone(vocabulary_size=len(tokens), num_layers=2, num_heads=2,
                                                hidden_dim=16, intermediate_dim=32, max_sequence_length=64)
    backbone.save_to_preset(str(folder))
    keras_hub.models.RobertaTokenizer(vocabulary={t: i for i, t in enumerate(tokens)},
                                      merges=merges).save_to_preset(str(folder))
    return backbone


def write_hugging_face_checkpoint(folder: Path, seed: int = 0):
    """A folder as `transformers` writes a BertModel (config.json, vocab.txt, tokenizer_config.json,
    model.safetensors with its tensor names and (out, in) layouts); returns the backbone it holds."""
    from safetensors.numpy import save_file

    backbone = tiny_backbone(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": len(VOCABULARY), "hidden_size": 16,
        "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64,
        "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12, "pad_token_id": 0}))
    (folder / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True,
                                                              "tokenizer_class": "BertTokenizer"}))

    def value(variable):
        return np.asarray(variable.numpy())

    def dense(variable):  # Keras (in, ...out) kernels -> torch's (out, in)
        kernel = value(variable)
        return kernel.reshape(kernel.shape[0], -1).T

    tensors = {
        "embeddings.word_embeddings.weight": value(backbone.get_layer("token_embedding").embeddings),
        "embeddings.position_embeddings.weight": value(backbone.get_layer("position_embedding").position_embeddings),
        "embeddings.token_type_embeddings.weight": value(backbone.get_layer("segment_embedding").embeddings),
        "embeddings.LayerNorm.weight": value(backbone.get_layer("embeddings_layer_norm").gamma),
        "embeddings.LayerNorm.bias": value(backbone.get_layer("embeddings_layer_norm").beta),
        "pooler.dense.weight": dense(backbone.get_layer("pooled_dense").kernel),
        "pooler.dense.bias": value(backbone.get_layer("pooled_dense").bias),
    }
    for i in range(backbone.num_layers):
        block, prefix = backbone.get_layer(f"transformer_layer_{i}"), f"encoder.layer.{i}."
        attention = block._self_attention_layer
        for name, layer in (("query", attention.query_dense), ("key", attention.key_dense),
                            ("value", attention.value_dense)):
            tensors[f"{prefix}attention.self.{name}.weight"] = dense(layer.kernel)
            tensors[f"{prefix}attention.self.{name}.bias"] = value(layer.bias).reshape(-1)
        output = value(attention.output_dense.kernel)  # (heads, head_dim, hidden)
        tensors[f"{prefix}attention.output.dense.weight"] = output.reshape(-1, output.shape[-1]).T
        tensors[f"{prefix}attention.output.dense.bias"] = value(attention.output_dense.bias)
        for hf_name, layer in (("attention.output.LayerNorm", block._self_attention_layer_norm),
                               ("output.LayerNorm", block._feedforward_layer_norm)):
            tensors[f"{prefix}{hf_name}.weight"] = value(layer.gamma)
            tensors[f"{prefix}{hf_name}.bias"] = value(layer.beta)
        for hf_name, layer in (("intermediate.dense", block._feedforward_intermediate_dense),
                               ("output.dense", block._feedforward_output_dense)):
            tensors[f"{prefix}{hf_name}.weight"] = dense(layer.kernel)
            tensors[f"{prefix}{hf_name}.bias"] = value(layer.bias)
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
              str(folder / "model.safetensors"))
    return backbone


# === Synthetic reviews (learnable in one epoch) ===

POSITIVE = "good great fine lovely superb wonderful".split()


NEGATIVE = "bad awful poor terrible boring dreadful".split()


FILLER = "the a movie film plot actor scene it was and".split()


def squad_articles(articles: int = 12, paragraphs: int = 3, questions: int = 4, seed: int = 0) -> list[dict]:
    """SQuAD v1.1 articles over the tiny checkpoints' words: each context a run of WORDS, each question "which
    word follows X" answered by the word after X (with its offset), so the data is well formed and learnable."""
    rng = np.random.default_rng(seed)
    data = []
    for a in range(articles):
        paragraphs_out = []
        for p in range(paragraphs):
            words = list(rng.choice(WORDS, size=int(rng.integers(12, 40))))
            context = " ".join(words)
            starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
            qas = []
            for q in range(questions):
                i = int(rng.integers(0, len(words) - 1))
                qas.append({"id": f"a{a}p{p}q{q}", "question": f"which word follows {words[i]} ?",
                            "answers": [{"text": words[i + 1], "answer_start": int(starts[i + 1])}]})
            paragraphs_out.append({"context": context, "qas": qas})
        data.append({"title": f"article {a}", "paragraphs": paragraphs_out})
    return data


def write_squad_json(path: Path, articles: int = 12, seed: int = 0) -> Path:
    path.write_text(json.dumps({"version": "1.1", "data": squad_articles(articles, seed=seed)}))
    return path


def synthetic_reviews(n: int, seed: int = 0) -> pd.DataFrame:
    """Short texts whose label is given by which sentiment words they contain (learnable in 1 epoch)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = i % 2
        words = list(rng.choice(FILLER, rng.integers(2, 12))) + list(
            rng.choice(POSITIVE if label else NEGATIVE, rng.integers(1, 4)))
        rng.shuffle(words)
        rows.append((" ".join(words), label))
    return pd.DataFrame(rows, columns=["text", "label"])


def evidence_pairs(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Evidence/claim pairs whose label needs both texts: "supported" when every word of the claim is in the
    evidence, else "unsupported" (two of its three words are not). Each text alone says nothing about the label;
    three pairs share a page ("pageK: ..."), for splits by page."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(40)]
    rows = []
    for i in range(n):
        evidence = list(rng.choice(vocabulary, 6, replace=False))
        if i % 2:
            claim, label = list(rng.choice(evidence, 3, replace=False)), "supported"
        else:
            others = [w for w in vocabulary if w not in evidence]
            claim, label = list(rng.choice(others, 2, replace=False)) + list(rng.choice(evidence, 1)), "unsupported"
        rng.shuffle(claim)
        rows.append((f"page{i // 3}: " + " ".join(evidence), " ".join(claim), label))
    return pd.DataFrame(rows, columns=["evidence", "claim", "label"])


ENGLISH_SPANISH = {  # a small grammar whose translations keep case, accents, ¿ and ¡
    "numbers": [("one", "un"), ("two", "dos"), ("three", "tres"), ("four", "cuatro"), ("five", "cinco")],
    "things": [("cats", "gatos"), ("dogs", "perros"), ("books", "libros"), ("apples", "manzanas")],
    "places": [("house", "casa"), ("station", "estación"), ("school", "escuela"), ("café", "cafetería")],
    "names": ["Tom", "Mary", "Ana"],
}


def write_english_spanish(path, repeats: int = 1) -> None:
    """Anki-format English/Spanish pairs from a small grammar: "Tom has two cats." -> "Tom tiene dos gatos.",
    "Where is the station?" -> "¿Dónde está la estación?", "Hello, Mary!" -> "¡Hola, Mary!"; a sentence with
    two accepted translations appears twice (multi-reference)."""
    g = ENGLISH_SPANISH
    lines = []
    for name in g["names"]:
        for en, es in g["numbers"]:
            for thing, cosa in g["things"]:
                lines.append(f"{name} has {en} {thing}.\t{name} tiene {es} {cosa}.\tCC-BY 2.0")
        for place, lugar in g["places"]:
            lines.append(f"{name} is at the {place}.\t{name} está en la {lugar}.\tCC-BY 2.0")
        lines.append(f"Hello, {name}!\t¡Hola, {name}!\tCC-BY 2.0")
        lines.append(f"Hello, {name}!\t¡Buenas, {name}!\tCC-BY 2.0")
    for place, lugar in g["places"]:
        lines.append(f"Where is the {place}?\t¿Dónde está la {lugar}?\tCC-BY 2.0")
    Path(path).write_text("\n".join(lines * repeats) + "\n", encoding="utf-8")


# === An environment without tensorflow-text (as on Windows) ===

def without_tensorflow_text(tmp_path):
    """The environment of a Python process in which `import tensorflow_text` fails, as on Windows."""
    import os

    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text('import sys\nsys.modules["tensorflow_text"] = None\n')
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a new user has it
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")]))}


# === Translation pairs: spellings reversed ===

SMALL = ["--set", "model.encoder_units=32", "--set", "model.decoder_units=64", "--set", "model.attention_units=32",
         "--set", "model.embedding_dim=16", "--set", "training.batch_size=64"]


def write_reversal_pairs(path, count: int, seed: int) -> None:
    """Spelling reversed, letter by letter ("abc" → "C B A"): attention must learn to look backwards."""
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(list("abcdefgh"), rng.integers(2, 7))) for _ in range(count)]
    pd.DataFrame({"source": words, "target": [" ".join(c.upper() for c in reversed(w)) for w in words]}).to_csv(
        path, index=False)


# === A series with two seasons ===

def two_season_series(n=600, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return 100 + 0.02 * t + 8 * np.sin(2 * np.pi * t / 6) + 5 * np.sin(2 * np.pi * t / 42) + rng.normal(0, 1, n)


# === A kill after an epoch ===

def kill_after(epoch: int):
    """A Keras callback that stands in for a kill: it stops the process after `epoch` is saved."""
    import keras

    class Crash(keras.callbacks.Callback):
        def on_epoch_end(self, finished, logs=None):
            if finished == epoch:
                raise KeyboardInterrupt

    return Crash()


# === Two-worker clusters on 127.0.0.1 ===

def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def tf_config_env(addresses, index, **extra):
    cluster = {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
    return {**os.environ, "TF_CONFIG": json.dumps(cluster), "TF_CPP_MIN_LOG_LEVEL": "2", **extra}


def start_workers(command, cwd, n=2):
    addresses = [f"127.0.0.1:{port}" for port in free_ports(n)]
    return [subprocess.Popen(command, cwd=cwd, env=tf_config_env(addresses, i), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in range(n)]


def finish(workers, timeout=300):
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=timeout)
        results.append((worker.returncode, out, err))
    return results


# === A real `kpipe serve` subprocess and a plain HTTP client ===

class Server:
    def __init__(self, process: subprocess.Popen, port: int, lines: list[str]):
        self.process, self.port, self.lines = process, port, lines

    def request(self, method: str, path: str, body: bytes | str | dict | None = None,
                headers: dict | None = None) -> tuple[int, dict]:
        """(HTTP status, JSON body) of one request on a fresh connection."""
        if isinstance(body, dict):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            reply = connection.getresponse()
            return reply.status, json.loads(reply.read())
        finally:
            connection.close()

    def post(self, path: str, body) -> tuple[int, dict]:
        return self.request("POST", path, body)

    def get(self, path: str) -> tuple[int, dict]:
        return self.request("GET", path)


def without_modules(*modules: str) -> str:
    """Python code that makes importing any of `modules` (or their submodules) fail, as if not installed."""
    return ("import sys\n"
            "class Blocked:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            f"        if name.split('.')[0] in {modules!r}:\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, Blocked())\n")


def kpipe_without(blocked: tuple[str, ...], *commands: list[str], cwd=None, timeout=120) -> subprocess.CompletedProcess:
    """Each of `commands` (`kpipe` arguments) through `main`, one after the other, in a fresh process where the
    `blocked` modules cannot be imported; the process fails if a command does not return 0 or if any blocked module
    was imported (their outputs, in order, are its stdout)."""
    script = without_modules(*blocked) + "from kpipe.cli.commands import main\n" + "".join(
        f"assert main({list(command)!r}) == 0, {list(command)!r}\n" for command in commands) + (
        f"assert not [m for m in sys.modules if m.split('.')[0] in {blocked!r}]\n")
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@contextlib.contextmanager
def served(*args: str, cwd, timeout: float = 180, blocked: tuple[str, ...] = ()):
    """`kpipe serve ARGS --port 0` in `cwd`, until its "Listening on" line; stopped on exit. With `blocked`,
    in a process where those modules cannot be imported."""
    command = ["-m", "kpipe"] if not blocked else ["-c", without_modules(*blocked) + (
        "import runpy\nsys.argv = ['kpipe', *sys.argv[1:]]\nrunpy.run_module('kpipe', run_name='__main__')\n")]
    process = subprocess.Popen([sys.executable, *command, "serve", *args, "--port", "0"], cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    found: queue.Queue = queue.Queue()

    def read():
        for line in process.stdout:
            lines.append(line)
            match = re.search(r"^Listening on http://127\.0\.0\.1:(\d+)", line)
            if match:
                found.put(int(match.group(1)))
        found.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        try:
            port = found.get(timeout=timeout)
        except queue.Empty:
            port = None
        assert port is not None, "the server did not start:\n" + "".join(lines)[-3000:]
        yield Server(process, port, lines)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def served_in_thread(*args: str, cwd):
    """`kpipe serve ARGS --port 0` set up as the command does, served by this process in a thread over real
    HTTP (no TensorFlow start-up: for the families' REST checks; the command has its subprocess tests)."""
    from kpipe.cli.commands import open_serving
    from kpipe.cli.parser import build_parser
    from kpipe.serving.app import http_server

    with contextlib.chdir(cwd):  # names resolve, and newer versions are looked for, from `cwd` as in the command
        models, sock, options = open_serving(build_parser().parse_args(["serve", *args, "--port", "0"]))
        server = http_server(models, options)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: server.started or not thread.is_alive(), every=0.05), "no start in 60 s"
            assert server.started, "the server thread ended before it started"
            yield Server(None, sock.getsockname()[1], [])
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            sock.close()


def wait_for(condition, timeout: float = 60, every: float = 0.5):
    """Poll `condition()` until it is truthy; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)
