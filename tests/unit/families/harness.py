"""The one test harness for model families, in the spirit of keras-hub's `run_layer_test`.

Every model family is listed in `FAMILY_CASES` with a small model (one case per variant that builds a
different graph: several labels per text, pairs of texts, attention variants); `test_every_family.py` runs
the same checks on each: output shapes, a training step that changes every trainable weight, a `.keras`
round trip and a SavedModel reload that give the same outputs, and (slow) a load in a fresh process. A new
family gets all of it by being listed here; `test_every_registered_family_has_a_case` fails until it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import keras
import numpy as np

from kpipe.families.pretrained_reader.model import SpanLoss

BATCH = 4


@dataclasses.dataclass(frozen=True)
class FamilyCase:
    """One small model of a family, and how to train it.

    Args:
        name: "family[variant]", the test id.
        family: the `model.family` the task registry names (`kpipe.tasks.registry.TASKS`).
        build: a fresh small model.
        loss: what the family's task trains it with.
        output_shape: the output's shape for a batch of `BATCH` (None: variable, e.g. time steps).
        training_steps: steps before every trainable weight must have moved (word2vec: its output vectors start
            at zero, so the input vectors get no gradient on the first step, as in word2vec itself).
        frozen: the model is frozen by design (no trainable weights; the training-step check asserts that).
    """

    name: str
    family: str
    build: Callable[[], keras.Model]
    loss: Any
    output_shape: tuple
    training_steps: int = 1
    frozen: bool = False

    def __repr__(self) -> str:
        return self.name


def example_inputs(model: keras.Model, seed: int = 0, length: int = 6):
    """A batch in the structure of `model.input` (one array, a list or a dict): small ids (1 or 2) for integer
    inputs, all-ones padding masks, zero segment ids, normal values for float inputs; `length` along every axis
    the model leaves open (time steps)."""
    rng = np.random.default_rng(seed)

    def one(spec):
        name = spec.name.split(":")[0]
        shape = [BATCH if i == 0 else (d or length) for i, d in enumerate(spec.shape)]
        if name == "padding_mask":
            return np.ones(shape, str(spec.dtype))
        if name == "segment_ids":
            return np.zeros(shape, "int32")
        if "bool" in str(spec.dtype):  # a mask of present words
            return np.ones(shape, "bool")
        if "int" in str(spec.dtype):
            return rng.integers(1, 3, shape).astype(str(spec.dtype))
        return rng.normal(size=shape).astype("float32")

    return keras.tree.map_structure(one, model.input)


def example_targets(case: FamilyCase, outputs: np.ndarray, seed: int = 0) -> np.ndarray:
    """Targets of the outputs' shape for the case's loss: class ids, 0/1 labels or real values."""
    rng = np.random.default_rng(seed + 1)
    if getattr(case.loss, "name", "") == "span_loss":  # a reader: each window's start and end positions
        return rng.integers(0, outputs.shape[1], (outputs.shape[0], 2))
    if case.loss in ("sparse_categorical_crossentropy", "crf") or isinstance(
            case.loss, keras.losses.SparseCategoricalCrossentropy):
        return rng.integers(0, outputs.shape[-1], outputs.shape[:-1])
    if case.loss in ("binary_crossentropy", "negative_sampling"):
        return (rng.random(outputs.shape) < 0.5).astype("float32")
    return rng.normal(size=outputs.shape).astype("float32")


def _loss(case: FamilyCase):
    if case.loss == "negative_sampling":
        from kpipe.families.word2vec.model import negative_sampling_loss
        return negative_sampling_loss
    return case.loss


def compiled(case: FamilyCase, model: keras.Model) -> keras.Model:
    """The model compiled with its task's loss, run eagerly: the check is that gradients reach every weight, the
    same in eager and graph mode, and tracing a training graph per case cost 37 of the file's 47 seconds (the task
    harness's runs train every task in graph mode)."""
    if case.loss == "crf":  # the CRF's negative log-likelihood reads the model's own transition scores
        from kpipe.layers.crf import CRFLoss
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss=CRFLoss(model.get_layer("crf")), run_eagerly=True)
        return model
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=_loss(case), run_eagerly=True)
    return model


# === The cases ===

def _rnn_classifier(**kwargs):
    from kpipe.families.rnn_classifier.config import RNNClassifierConfig
    from kpipe.families.rnn_classifier.model import build_rnn_classifier
    return lambda: build_rnn_classifier(RNNClassifierConfig(vocabulary_size=12, embedding_dim=4, units=(4,),
                                                            **kwargs))


def _transformer_classifier(**kwargs):
    from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
    from kpipe.families.transformer_classifier.model import build_transformer_classifier
    return lambda: build_transformer_classifier(TransformerClassifierConfig(
        hidden_dim=8, num_heads=2, intermediate_dim=16, num_layers=1, vocabulary_size=12, sequence_length=6,
        **kwargs))


def _bag_of_ngrams(nb_classes: int = 0, **kwargs):
    from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
    from kpipe.families.bag_of_ngrams.model import build_bag_of_ngrams

    def build():
        ratios = (np.random.default_rng(1).normal(size=(20, nb_classes)).astype("float32") if nb_classes
                  else None)
        return build_bag_of_ngrams(BagOfNgramsConfig(vocabulary_size=20, **kwargs), ratios)
    return build


def _pretrained_reader():
    from kpipe.families.pretrained_reader.config import PretrainedReaderConfig
    from kpipe.families.pretrained_reader.model import build_pretrained_reader
    from tests.checkpoints import tiny_backbone

    return build_pretrained_reader(PretrainedReaderConfig(preset="tiny", dropout=0.0), tiny_backbone(0))


def _pretrained_tagger(**settings):
    def build():
        from kpipe.families.pretrained_tagger.config import PretrainedTaggerConfig
        from kpipe.families.pretrained_tagger.model import build_pretrained_tagger
        from tests.checkpoints import tiny_backbone

        return build_pretrained_tagger(PretrainedTaggerConfig(preset="tiny", num_tags=5, dropout=0.0, **settings),
                                       tiny_backbone(0))
    return build


def _pretrained(family: str):
    def build():
        from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
        from kpipe.families.pretrained_classifier.model import build_pretrained_classifier
        from kpipe.families.sentence_encoder.config import SentenceEncoderConfig
        from kpipe.families.sentence_encoder.model import build_sentence_encoder
        from tests.checkpoints import tiny_backbone

        if family == "sentence_encoder":
            return build_sentence_encoder(SentenceEncoderConfig(preset="tiny", normalize=True), tiny_backbone(0))
        return build_pretrained_classifier(PretrainedClassifierConfig(preset="tiny", num_classes=3, dropout=0.0),
                                           tiny_backbone(0))
    return build


def _rnn_forecaster():
    from kpipe.families.rnn_forecaster.config import RNNForecasterConfig
    from kpipe.families.rnn_forecaster.model import build_rnn_forecaster
    return lambda: build_rnn_forecaster(RNNForecasterConfig(units=(4,)))


def _char_generator(family: str):
    def build():
        from kpipe.families.char_rnn.config import CharGeneratorConfig
        from kpipe.families.char_rnn.model import build_char_generator
        from kpipe.families.char_transformer.config import CharTransformerConfig
        from kpipe.families.char_transformer.model import build_char_transformer

        if family == "char_rnn":
            return build_char_generator(CharGeneratorConfig(embedding_dim=4, units=(8,), conditioning="every_step",
                                                            vocabulary_size=10, num_categories=3))
        return build_char_transformer(CharTransformerConfig(
            hidden_dim=8, num_heads=2, intermediate_dim=16, num_layers=1, conditioning="every_step",
            vocabulary_size=10, num_categories=3, sequence_length=6))
    return build


def _seq2seq():
    from kpipe.families.seq2seq_attention.config import Seq2SeqConfig
    from kpipe.families.seq2seq_attention.model import build_seq2seq
    return lambda: build_seq2seq(Seq2SeqConfig(embedding_dim=4, encoder_units=4, decoder_units=4, attention_units=4,
                                               source_vocabulary_size=12, target_vocabulary_size=12)).model


def _seq2seq_transformer():
    from kpipe.families.seq2seq_transformer.config import Seq2SeqTransformerConfig
    from kpipe.families.seq2seq_transformer.model import build_seq2seq_transformer
    return lambda: build_seq2seq_transformer(Seq2SeqTransformerConfig(
        hidden_dim=8, num_heads=2, intermediate_dim=16, source_vocabulary_size=12, target_vocabulary_size=12,
        source_positions=8, target_positions=8)).model


def _word2vec(family: str):
    from kpipe.families.word2vec.config import Word2VecConfig
    from kpipe.families.word2vec.model import build_cbow, build_skipgram
    build = build_skipgram if family == "skipgram" else build_cbow
    return lambda: build(Word2VecConfig(family=family, embedding_dim=4, vocabulary_size=12))


def _rnn_tagger(**kwargs):
    from kpipe.families.rnn_tagger.config import RNNTaggerConfig
    from kpipe.families.rnn_tagger.model import build_rnn_tagger
    return lambda: build_rnn_tagger(RNNTaggerConfig(vocabulary_size=12, char_vocabulary_size=12, num_tags=5,
                                                    embedding_dim=4, char_embedding_dim=3, char_units=4,
                                                    casing_dim=2, units=(4,), **kwargs))


def _gpt(**kwargs):
    from kpipe.families.gpt.config import GPTConfig
    from kpipe.families.gpt.model import build_gpt
    return lambda: build_gpt(GPTConfig(vocabulary_size=12, max_sequence_length=8, num_layers=1, num_heads=2,
                                       hidden_dim=8, intermediate_dim=16, dropout=0.0, **kwargs))


def _rnn_lm(**kwargs):
    from kpipe.families.rnn_lm.config import RNNLanguageModelConfig
    from kpipe.families.rnn_lm.model import build_rnn_lm
    return lambda: build_rnn_lm(RNNLanguageModelConfig(vocabulary_size=12, embedding_dim=6, units=(8,), **kwargs))


SPARSE_CE = "sparse_categorical_crossentropy"
LOGITS_CE = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

FAMILY_CASES = [
    FamilyCase("rnn_classifier[3 classes]", "rnn_classifier", _rnn_classifier(num_classes=3, pooling="max_mean"),
               SPARSE_CE, (BATCH, 3)),
    FamilyCase("rnn_classifier[several labels]", "rnn_classifier", _rnn_classifier(num_classes=4, multi_label=True),
               "binary_crossentropy", (BATCH, 4)),
    FamilyCase("rnn_classifier[pairs]", "rnn_classifier", _rnn_classifier(num_classes=3, text_pairs=True),
               SPARSE_CE, (BATCH, 3)),
    FamilyCase("transformer_classifier[softmax]", "transformer_classifier", _transformer_classifier(num_classes=3),
               SPARSE_CE, (BATCH, 3)),
    FamilyCase("transformer_classifier[fmm, several labels]", "transformer_classifier",
               _transformer_classifier(num_classes=3, attention="fmm", multi_label=True), "binary_crossentropy",
               (BATCH, 3)),
    FamilyCase("transformer_classifier[linear]", "transformer_classifier",
               _transformer_classifier(num_classes=3, attention="linear", feature_map="relu"), SPARSE_CE, (BATCH, 3)),
    FamilyCase("transformer_classifier[random features, redrawn]", "transformer_classifier",
               _transformer_classifier(num_classes=3, attention="random_features", num_random_features=16,
                                       redraw="every_step"), SPARSE_CE, (BATCH, 3)),
    FamilyCase("bag_of_ngrams[tfidf, linear]", "bag_of_ngrams", _bag_of_ngrams(weighting="tfidf", num_classes=3),
               SPARSE_CE, (BATCH, 3)),
    FamilyCase("bag_of_ngrams[nb, hidden]", "bag_of_ngrams", _bag_of_ngrams(nb_classes=1, hidden_units=4),
               "binary_crossentropy", (BATCH, 1)),
    FamilyCase("bag_of_ngrams[several labels]", "bag_of_ngrams",
               _bag_of_ngrams(weighting="binary", num_classes=4, multi_label=True), "binary_crossentropy",
               (BATCH, 4)),
    FamilyCase("pretrained_classifier", "pretrained_classifier", _pretrained("pretrained_classifier"), SPARSE_CE,
               (BATCH, 3)),
    FamilyCase("sentence_encoder", "sentence_encoder", _pretrained("sentence_encoder"), "mse", (BATCH, 16),
               frozen=True),
    FamilyCase("rnn_forecaster", "rnn_forecaster", _rnn_forecaster(), "mse", (BATCH, None)),
    FamilyCase("char_rnn", "char_rnn", _char_generator("char_rnn"), LOGITS_CE, (BATCH, None, 10)),
    FamilyCase("char_transformer", "char_transformer", _char_generator("char_transformer"), LOGITS_CE,
               (BATCH, 6, 10)),
    FamilyCase("seq2seq_attention", "seq2seq_attention", _seq2seq(), SPARSE_CE, (BATCH, None, 12)),
    FamilyCase("seq2seq_transformer", "seq2seq_transformer", _seq2seq_transformer(), SPARSE_CE, (BATCH, None, 12)),
    FamilyCase("skipgram", "skipgram", _word2vec("skipgram"), "negative_sampling", (BATCH, None),
               training_steps=2),
    FamilyCase("rnn_tagger[crf, character CNN]", "rnn_tagger", _rnn_tagger(output="crf"), "crf", (BATCH, None, 5)),
    FamilyCase("rnn_tagger[softmax, character BiLSTM]", "rnn_tagger",
               _rnn_tagger(output="softmax", char_features="lstm"), SPARSE_CE, (BATCH, None, 5)),
    FamilyCase("gpt", "gpt", _gpt(), LOGITS_CE, (BATCH, None, 12)),
    FamilyCase("gpt[linear attention]", "gpt", _gpt(attention="linear"), LOGITS_CE, (BATCH, None, 12)),
    FamilyCase("rnn_lm[lstm, tied through a projection]", "rnn_lm", _rnn_lm(), LOGITS_CE, (BATCH, None, 12)),
    FamilyCase("rnn_lm[gru, untied]", "rnn_lm", _rnn_lm(cell="gru", tie_weights=False), LOGITS_CE, (BATCH, None, 12)),
    FamilyCase("pretrained_reader", "pretrained_reader", _pretrained_reader, SpanLoss(), (BATCH, None, 2)),
    FamilyCase("pretrained_tagger[last, softmax]", "pretrained_tagger", _pretrained_tagger(), SPARSE_CE,
               (BATCH, None, 5)),
    FamilyCase("pretrained_tagger[concat_last_four, casing, BiLSTM, CRF]", "pretrained_tagger",
               _pretrained_tagger(features="concat_last_four", casing=True, casing_dim=3, head="bilstm", head_units=4,
                                  output="crf"), "crf", (BATCH, None, 5)),
    FamilyCase("cbow", "cbow", _word2vec("cbow"), "negative_sampling", (BATCH, None), training_steps=2),
]

# Families that are not one Keras model, and why.
NOT_ONE_MODEL = {"ensemble": "its members are the families above, each run through the harness; the ensemble "
                             "is a weighted average in the export's graph (tests/e2e/test_ngrams_end_to_end.py)"}
