"""The reader's in-graph decoding (`AnswerServing`) against a brute-force NumPy search over every window's spans, with
a model whose logits are a fixed random function of the token ids."""

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.pretrained_reader.model import MaskPositions
from kpipe.preprocessing.answer_windows import AnswerWindows
from kpipe.tasks.answer import signatures as serving_module
from kpipe.portable.reader import N_BEST_MOST
from kpipe.tasks.answer.signatures import AnswerServing
from tests.checkpoints import VOCABULARY, WORDS

MAX_ANSWER = 3


def logit_model(seed: int) -> keras.Model:
    inputs = {name: keras.Input((None,), dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask")}
    embedding = keras.layers.Embedding(len(VOCABULARY), 2, embeddings_initializer=keras.initializers.RandomNormal(
        stddev=3.0, seed=seed))
    segments = keras.ops.expand_dims(keras.ops.cast(inputs["segment_ids"], "float32"), -1)
    logits = embedding(inputs["token_ids"]) + 0.5 * segments
    return keras.Model(inputs, MaskPositions()(logits, inputs["padding_mask"]))


_SERVINGS = {}


def serving_with_seed(seed: int, unanswerable: bool, chunk: int = 64) -> AnswerServing:
    """An `AnswerServing` over `logit_model(seed)`'s logits: one per (unanswerable, chunk) for the module, its model's
    weights set to the seed's, so its graphs are traced once (`chunk`: the WINDOW_CHUNK it is traced with)."""
    key = (unanswerable, chunk)
    if key not in _SERVINGS:
        tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)
        windows = AnswerWindows(tokenizer, sequence_length=20, stride=5, max_question_tokens=6)
        _SERVINGS[key] = AnswerServing(logit_model(0), windows, max_answer_tokens=MAX_ANSWER,
                                       unanswerable=unanswerable)
    serving = _SERVINGS[key]
    serving.model.set_weights(logit_model(seed).get_weights())
    serving.no_answer_threshold.assign(0.0)
    return serving


def brute_force(model, windows: dict, contexts: list[str], unanswerable: bool,
                threshold: float = 0.0) -> list[tuple[str, int, int, float]]:
    logits = model({k: windows[k] for k in ("token_ids", "segment_ids", "padding_mask")}).numpy()
    best = {}
    for n, e in enumerate(windows["example"].numpy()):
        index, present = windows["context_index"][n].numpy(), windows["padding_mask"][n].numpy()
        allowed = [p for p in range(len(index)) if present[p] and (index[p] >= 0 or p == 0)]
        probabilities = {}
        for k in (0, 1):
            values = np.array([logits[n, p, k] for p in allowed], np.float64)
            values = np.exp(values - values.max()) / np.exp(values - values.max()).sum()
            probabilities[k] = dict(zip(allowed, values))
        spans = [(probabilities[0][i] * probabilities[1][j], i, j) for i in allowed for j in allowed
                 if index[i] >= 0 and index[j] >= 0 and i <= j < i + MAX_ANSWER]
        null = probabilities[0][0] * probabilities[1][0]
        if spans:
            score, i, j = max(spans, key=lambda s: s[0])
            if e not in best or score > best[e][0] + 1e-9:
                best[e] = (score, n, int(index[i]), int(index[j]))
        best.setdefault(("null", e), null)
        best[("null", e)] = min(best[("null", e)], null)
    answers = []
    for e, context in enumerate(contexts):
        if e not in best or (unanswerable and np.log(best[("null", e)]) - np.log(best[e][0]) > threshold):
            answers.append(("", -1, -1))
            continue
        _, _, first, last = best[e]
        start_byte, end_byte = windows["starts"][e][first].numpy(), windows["ends"][e][last].numpy()
        raw = context.encode("utf-8")
        start = len(raw[:start_byte].decode("utf-8"))
        answers.append((raw[start_byte:end_byte].decode("utf-8"), start, start + len(raw[start_byte:end_byte].decode())))
    return answers


@pytest.mark.parametrize("seed, unanswerable, chunk, threshold", [
    (0, False, 64, 0.0), (1, False, 4, 0.0), (2, False, 64, 0.0), (0, True, 64, 0.0), (1, True, 64, -10.0),
    (2, True, 4, -12.5)])  # thresholds that turn some spans into "no answer" (their diffs: -8.3, -2.5; -9.5, -11.9)
@pytest.mark.slow
def test_the_graphs_answer_is_the_best_span_over_all_windows(seed, unanswerable, chunk, threshold, monkeypatch):
    monkeypatch.setattr(serving_module, "WINDOW_CHUNK", chunk)  # 4: the windows run through several encoder calls
    rng = np.random.default_rng(seed)
    contexts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 40)))) for _ in range(6)]
    contexts += ["", "Thé plot, was GOOD — and 😀 the Crew ...", "x"]
    questions = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 8)))) for _ in contexts]
    serving = serving_with_seed(seed, unanswerable, chunk)
    model, windows = serving.model, serving.windows
    serving.no_answer_threshold.assign(threshold)
    out = {k: v.numpy() for k, v in serving.serve(tf.constant(questions), tf.constant(contexts)).items()}
    expected = brute_force(model, windows(tf.constant(questions), tf.constant(contexts)), contexts, unanswerable,
                           threshold)
    assert len(set(windows(tf.constant(questions), tf.constant(contexts))["example"].numpy())) == len(contexts)
    for i, (text, start, end) in enumerate(expected):
        assert (out["answer"][i].decode(), int(out["start"][i]), int(out["end"][i])) == (text, start, end), i
        if start >= 0:
            assert contexts[i][start:end] == text  # character offsets into the raw context
    assert out["answer"][contexts.index("")].decode() == "" and out["start"][contexts.index("")] == -1


def every_span(model, windows: dict) -> dict:
    """{question: {(first piece, last piece): the span's best probability over the windows that hold it}},
    written pair by pair."""
    logits = model({k: windows[k] for k in ("token_ids", "segment_ids", "padding_mask")}).numpy()
    found = {}
    for n, e in enumerate(windows["example"].numpy()):
        index, present = windows["context_index"][n].numpy(), windows["padding_mask"][n].numpy()
        allowed = [p for p in range(len(index)) if present[p] and (index[p] >= 0 or p == 0)]
        probabilities = []
        for k in (0, 1):
            values = np.array([logits[n, p, k] for p in allowed], np.float64)
            exponents = np.exp(values - values.max())
            probabilities.append(dict(zip(allowed, exponents / exponents.sum())))
        spans = found.setdefault(int(e), {})
        for i in allowed:
            for j in allowed:
                if index[i] >= 0 and index[j] >= 0 and i <= j < i + MAX_ANSWER:
                    key = (int(index[i]), int(index[j]))
                    spans[key] = max(spans.get(key, 0.0), probabilities[0][i] * probabilities[1][j])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("seed, k", [(0, 1), (1, 5), (2, 20)])
def test_n_best_is_each_questions_likeliest_spans_over_all_windows_each_span_once(seed, k):
    rng = np.random.default_rng(seed)
    contexts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 40)))) for _ in range(5)] + ["", "x", "Thé 😀 crew"]
    questions = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 8)))) for _ in contexts]
    serving = serving_with_seed(seed, unanswerable=False)
    model, windows = serving.model, serving.windows
    out = {key: v.numpy() for key, v in serving.n_best(tf.constant(questions), tf.constant(contexts),
                                                       tf.constant(k)).items()}
    best = {key: v.numpy() for key, v in serving.serve(tf.constant(questions), tf.constant(contexts)).items()}
    made = windows(tf.constant(questions), tf.constant(contexts))
    spans = every_span(model, made)
    assert out["answers"].shape == (len(contexts), k)
    for e, context in enumerate(contexts):
        ranked = sorted(spans.get(e, {}).items(), key=lambda item: -item[1])[:k]
        raw = context.encode("utf-8")
        for rank in range(k):
            if rank >= len(ranked):
                assert (out["answers"][e, rank], out["starts"][e, rank], out["scores"][e, rank]) == (b"", -1, 0.0)
                continue
            (first, last), probability = ranked[rank]
            start_byte, end_byte = made["starts"][e][first].numpy(), made["ends"][e][last].numpy()
            start = len(raw[:start_byte].decode("utf-8"))
            text = raw[start_byte:end_byte].decode("utf-8")
            assert out["answers"][e, rank].decode() == text == context[start:start + len(text)], (e, rank)
            assert (out["starts"][e, rank], out["ends"][e, rank]) == (start, start + len(text))
            assert out["scores"][e, rank] == pytest.approx(probability, rel=1e-4)
        if ranked:  # the first is serving_default's answer
            assert (out["answers"][e, 0], out["starts"][e, 0]) == (best["answer"][e], best["start"][e])


@pytest.mark.slow  # traces the reader's decoding graph
def test_the_run_sets_the_no_answer_threshold_that_gives_the_best_validation_f1():
    """`choose_no_answer_threshold` over the graph's own best spans and no-answer scores: the threshold set in the
    export is best_no_answer_threshold's on them, and the served answers then score that F1."""
    from kpipe.datasets.questions import Question
    from kpipe.evaluation.squad import best_no_answer_threshold, squad_scores
    from kpipe.tasks.answer.run import choose_no_answer_threshold

    rng = np.random.default_rng(3)
    serving = serving_with_seed(3, unanswerable=True)
    questions = []
    for i in range(40):
        context = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 30))))
        word = str(rng.choice(context.split()))
        answers = () if i % 2 else ((word, context.index(word)),)  # half of them unanswerable
        questions.append(Question(f"q{i}", " ".join(rng.choice(WORDS, size=3)), context, answers, "a"))
    chosen = choose_no_answer_threshold(serving, questions)
    assert float(serving.no_answer_threshold.numpy()) == pytest.approx(chosen["threshold"])
    assert chosen["f1"] >= chosen["f1_at_zero"]
    served = serving.serve(tf.constant([q.question for q in questions]), tf.constant([q.context for q in questions]))
    predictions = {q.id: text.decode() for q, text in zip(questions, served["answer"].numpy())}
    assert squad_scores(questions, predictions)["f1"] == pytest.approx(chosen["f1"], abs=1e-6)
    assert chosen == best_no_answer_threshold(questions, *_best_spans(serving, questions))


def _best_spans(serving, questions):
    out = serving.n_best(tf.constant([q.question for q in questions]), tf.constant([q.context for q in questions]),
                         tf.constant(1))
    return ([t.decode() for t in out["answers"].numpy()[:, 0]], out["scores"].numpy()[:, 0].tolist(),
            out["no_answer_score"].numpy().tolist())


@pytest.mark.slow  # traces the reader's decoding graph
def test_n_best_refuses_k_out_of_range():
    serving = serving_with_seed(0, unanswerable=False)
    for k, message in [(0, "at least 1"), (N_BEST_MOST + 1, "at most")]:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            serving.n_best(tf.constant(["who"]), tf.constant(["the crew"]), tf.constant(k))


def test_a_batch_of_empty_contexts_or_of_no_questions_has_no_answers():
    serving = serving_with_seed(0, unanswerable=False)
    out = serving.serve(tf.constant(["who ?", ""]), tf.constant(["", "  "]))
    assert out["answer"].numpy().tolist() == [b"", b""] and out["start"].numpy().tolist() == [-1, -1]
    nothing = tf.constant([], tf.string)  # and a batch of no questions: no answers, no error
    assert serving.serve(nothing, nothing)["answer"].shape == (0,)
    assert serving.n_best(nothing, nothing, tf.constant(2))["answers"].shape == (0, 2)


class CountRows(keras.layers.Layer):
    """Passes its input through, adding the number of windows it is called on to `rows`."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.rows = self.add_weight(shape=(), initializer="zeros", dtype="int32", trainable=False, name="rows")

    def call(self, x):
        self.rows.assign_add(keras.ops.shape(x)[0])
        return x


@pytest.mark.parametrize("contexts, chunk, rows", [(["the film was good"], 64, 1),  # one window: one row, no padding
                                                   ([" ".join(["good"] * 30)], 4, 6),  # 5 windows: 2 chunks of 3
                                                   ([" ".join(["good"] * 30)], 64, 5)])
@pytest.mark.slow
def test_the_encoder_reads_as_few_padding_windows_as_can_be(contexts, chunk, rows, monkeypatch):
    monkeypatch.setattr(serving_module, "WINDOW_CHUNK", chunk)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)
    windows = AnswerWindows(tokenizer, sequence_length=20, stride=5, max_question_tokens=6)
    inner = logit_model(0)
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("token_ids", "segment_ids",
                                                                             "padding_mask")}
    counter = CountRows()
    model = keras.Model(inputs, counter(inner(inputs)))
    AnswerServing(model, windows, max_answer_tokens=MAX_ANSWER, unanswerable=False).serve(
        tf.constant(["which ?"] * len(contexts)), tf.constant(contexts))
    assert int(counter.rows.numpy()) == rows
