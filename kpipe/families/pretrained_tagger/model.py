"""`build_pretrained_tagger`: an encoder's windows (`kpipe.preprocessing.word_windows`) -> the chosen features of
every piece -> each word's features at its first piece (batch, words, features) [beside its casing's embedding] ->
dropout -> [BiLSTM] -> a tag per word: probabilities with a softmax output, the CRF's emissions with a CRF (decoded by
`kpipe.layers.crf.CRF.viterbi`)."""

from __future__ import annotations

import keras

from kpipe.families.encoder_inputs import backbone_inputs
from kpipe.families.pretrained_tagger.config import PretrainedTaggerConfig
from kpipe.layers.crf import CRF
from kpipe.tokens import CASING_CLASSES


@keras.saving.register_keras_serializable(package="kpipe")
class GatherWords(keras.layers.Layer):
    """Pieces' features (windows, length, features) -> each word's (batch, words, features), from the flat row
    index of its first piece (`word_index`)."""

    def call(self, features, word_index):
        flat = keras.ops.reshape(features, (-1, keras.ops.shape(features)[-1]))
        return keras.ops.take(flat, keras.ops.cast(word_index, "int32"), axis=0)

    def compute_output_shape(self, features_shape, word_index_shape):
        return (*word_index_shape, features_shape[-1])


def encoder_features(backbone: keras.Model, features: str) -> keras.Model:
    """The backbone's inputs -> the `features` of every piece (windows, length, hidden or 4 x hidden): its layers'
    outputs, by the names keras-hub's BERT-family backbones give them."""
    layers = [layer for layer in backbone.layers if layer.name.startswith("transformer_layer_")]
    outputs = {"embeddings": backbone.get_layer("embeddings_dropout").output,
               **{i: layer.output for i, layer in enumerate(layers)}}
    last_four = [outputs[i] for i in range(max(0, len(layers) - 4), len(layers))]
    chosen = {"embeddings": lambda: outputs["embeddings"],
              "last": lambda: outputs[len(layers) - 1],
              "second_to_last": lambda: outputs[max(0, len(layers) - 2)],
              "sum_last_four": lambda: keras.layers.Add(name="sum_last_four")(last_four) if len(last_four) > 1
              else last_four[0],
              "concat_last_four": lambda: keras.layers.Concatenate(name="concat_last_four")(last_four)
              if len(last_four) > 1 else last_four[0],
              "sum_all": lambda: keras.layers.Add(name="sum_all")([outputs[i] for i in range(len(layers))])
              if len(layers) > 1 else outputs[0]}[features]()
    return keras.Model(backbone.input, chosen, name="encoder_features")


def build_pretrained_tagger(config: PretrainedTaggerConfig, backbone: keras.Model) -> keras.Model:
    """The tagger on the windows' inputs (the backbone's, each (windows, length)) and {"word_index", "word_mask"}
    [and "casing", with `config.casing`] (batch, words); outputs (batch, words, tags)."""
    if config.backbone_training == "frozen":
        backbone.trainable = False
    encoder = encoder_features(backbone, config.features)
    inputs = backbone_inputs(backbone)
    word_index = keras.Input((None,), dtype="int32", name="word_index")
    word_mask = keras.Input((None,), dtype="bool", name="word_mask")
    x = GatherWords(name="first_pieces")(encoder(inputs), word_index)
    words = {"word_index": word_index, "word_mask": word_mask}
    if config.casing:
        words["casing"] = keras.Input((None,), dtype="int32", name="casing")
        casing = keras.layers.Embedding(CASING_CLASSES, config.casing_dim, name="casing_embedding")(words["casing"])
        x = keras.layers.Concatenate(name="with_casing")([x, casing])
    x = keras.layers.Dropout(config.dropout, name="feature_dropout")(x)
    if config.head == "bilstm":
        x = keras.layers.Bidirectional(keras.layers.LSTM(config.head_units, return_sequences=True),
                                       name="head_bilstm")(x, mask=word_mask)
        x = keras.layers.Dropout(config.dropout, name="head_dropout")(x)
    scores = keras.layers.Dense(config.num_tags, dtype="float32", name="emissions")(x)
    if config.output == "crf":
        outputs = CRF(config.num_tags, name="crf")(scores)
    else:
        outputs = keras.layers.Activation("softmax", dtype="float32", name="probabilities")(scores)
    return keras.Model({**inputs, **words}, outputs, name="pretrained_tagger")
