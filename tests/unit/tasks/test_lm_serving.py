"""The language-model export's graph, for every family's decoder: greedy generation (with key/value caches, or a
recurrent state) equals rerunning the whole model on every prefix, `score` equals the log-softmax of the model's
own logits (windows included), and a seed repeats."""

import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.gpt.config import GPTConfig
from kpipe.families.rnn_lm.config import RNNLanguageModelConfig
from kpipe.tasks.registry import family_spec
from kpipe.preprocessing.byte_bpe import ByteBPE
from kpipe.tasks.lm.signatures import BEAM_WIDTH, LanguageModelServing

TEXTS = ["In the beginning God created the heavens and the earth.", "And God said, let there be light.",
         "The earth was without form, and void; and darkness was upon the face of the deep."] * 10
CONTEXT = 24
STRIDE = 10  # scoring windows start every STRIDE tokens (not a divisor of CONTEXT: the last window is partial),
# run through the model 3 at a time (the second text's windows take several such chunks)


MODELS = {  # a small model of each family (and cell), dropout on: generation must not apply it
    "gpt": lambda size: GPTConfig(vocabulary_size=size, max_sequence_length=CONTEXT, num_layers=2, num_heads=2,
                                  hidden_dim=16, intermediate_dim=32, dropout=0.0),
    "gpt[linear attention]": lambda size: GPTConfig(vocabulary_size=size, max_sequence_length=CONTEXT, num_layers=2,
                                                    num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.3,
                                                    attention="linear"),
    "rnn_lm[lstm, projected]": lambda size: RNNLanguageModelConfig(vocabulary_size=size, embedding_dim=12,
                                                                   units=(16, 16), dropout=0.3),
    "rnn_lm[gru]": lambda size: RNNLanguageModelConfig(vocabulary_size=size, embedding_dim=16, cell="gru",
                                                       units=(16,), dropout=0.3),
}


@pytest.fixture(scope="module", params=list(MODELS))
def served(request):
    bpe = ByteBPE.learn(TEXTS, vocabulary_size=300)
    tf.keras.utils.set_random_seed(0)
    config = MODELS[request.param](bpe.size)
    spec = family_spec("lm", config.family)
    model = spec.build(config)
    return bpe, model, LanguageModelServing(model, spec.decoding()(model, config), bpe, CONTEXT, STRIDE,
                                             score_windows=3)


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def full_model_logits(model, ids):
    ids = np.array([ids], "int32")
    return model({"token_ids": ids, "padding_mask": np.ones_like(ids, bool)}, training=False).numpy()[0]


@pytest.mark.slow
def test_greedy_generation_with_caches_equals_rerunning_the_model_on_every_prefix(served):
    bpe, model, serving = served
    prompts = ["In the", "And God said, let there"]  # different lengths: the shorter one's row starts earlier
    out = serving.generate(tf.constant(prompts), tf.constant(10), tf.constant(0.0), tf.constant(0),
                           tf.constant(1.0), tf.constant(-1))["text"].numpy()
    written = 0
    for prompt, text in zip(prompts, out):
        ids, expected = [bpe.end_of_text] + bpe.encode([prompt])[0], []
        for _ in range(10):
            token = int(full_model_logits(model, ids)[-1].argmax())
            if token == bpe.end_of_text:
                break
            ids.append(token)
            expected.append(token)
        assert text.decode("utf-8", "replace") == bpe.decode(expected)
        written += len(expected)
    assert written >= 10  # the untrained model writes something: the comparison is not of two empty strings


@pytest.mark.slow
def test_beam_search_equals_a_beam_search_that_reruns_the_model(served):
    """keras-hub's BeamSampler over the decoder against beam search written here over whole-model reruns: each
    step every beam's continuations are scored, the `BEAM_WIDTH` likeliest kept, the likeliest returned."""
    bpe, model, serving = served
    prompts = ("In the", "And God said")  # in one batch: each row's beams are its own, whatever the other's length
    outputs = serving.beam_search(tf.constant(prompts), tf.constant(4))["text"].numpy()
    for prompt, out in zip(prompts, outputs):
        beams = [(0.0, [bpe.end_of_text] + bpe.encode([prompt])[0])]
        start = len(beams[0][1])
        for _ in range(4):
            candidates = []
            for score, ids in beams:
                log_probs = log_softmax(full_model_logits(model, ids)[-1].astype("float64"))
                candidates += [(score + log_probs[token], ids + [token]) for token in range(len(log_probs))]
            beams = sorted(candidates, key=lambda candidate: -candidate[0])[:BEAM_WIDTH]
        best = beams[0][1][start:]
        assert bpe.end_of_text not in best  # (the sampler keeps writing past it; the export cuts there)
        assert out.decode("utf-8", "replace") == bpe.decode(best)


@pytest.mark.slow
def test_score_is_the_log_softmax_of_the_models_logits_over_windows(served):
    """Each token is scored in the first window that holds it (windows of CONTEXT tokens every STRIDE), read after
    the window's tokens before it."""
    bpe, model, serving = served
    texts = [TEXTS[0], " ".join(TEXTS[:4]), ""]  # the second needs several windows of CONTEXT tokens
    out = {k: v.numpy() for k, v in serving.score(tf.constant(texts)).items()}
    for i, text in enumerate(texts):
        ids = [bpe.end_of_text] + bpe.encode([text])[0]
        inputs, targets = ids[:-1], ids[1:]
        assert len(targets) > CONTEXT + 2 * STRIDE or i != 1
        total, logits = 0.0, {}
        for j, target in enumerate(targets):
            start = max(0, (j - CONTEXT) // STRIDE + 1) * STRIDE
            if start not in logits:
                logits[start] = log_softmax(full_model_logits(model, inputs[start:start + CONTEXT]).astype("float64"))
            total += logits[start][j - start, target]
        assert out["log_likelihood"][i] == pytest.approx(total, rel=1e-4, abs=1e-6)
        assert out["tokens"][i] == len(targets) and out["words"][i] == len(text.split())
        assert out["characters"][i] == len(text)
    assert serving.score(tf.constant([], tf.string))["log_likelihood"].shape == (0,)


@pytest.mark.slow  # traces the sampling and beam-search graphs (12 s)
@pytest.mark.parametrize("served", ["gpt"], indirect=True)  # the samplers' settings: the same for every decoder
def test_a_seed_repeats_a_sample_and_bad_settings_fail_in_the_graph(served):
    _, _, serving = served
    prompts = tf.constant(["In the beginning"])

    def sample(seed, top_k=0, top_p=0.9, temperature=1.0, new=12):
        return serving.generate(prompts, tf.constant(new), tf.constant(temperature), tf.constant(top_k),
                                tf.constant(top_p), tf.constant(seed))["text"].numpy()[0]

    assert sample(5) == sample(5)
    nothing = tf.constant([], tf.string)  # a batch of no prompts: no texts, no error, whatever the sampler
    assert serving.generate(nothing, tf.constant(4), tf.constant(0.0), tf.constant(0), tf.constant(1.0),
                            tf.constant(-1))["text"].shape == (0,)
    assert serving.beam_search(nothing, tf.constant(4))["text"].shape == (0,)
    assert len({sample(seed) for seed in range(6)}) > 1
    for bad, message in [(dict(top_p=0.0), "top_p"), (dict(temperature=-1.0), "temperature"),
                         (dict(top_k=10_000), "top_k"), (dict(new=CONTEXT), "context")]:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sample(1, **bad)
