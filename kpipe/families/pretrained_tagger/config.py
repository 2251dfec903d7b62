"""The `pretrained_tagger` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, fraction, one_of, setting

# Which of the encoder's outputs a word is read from (the lecture notes' table of BERT features for CoNLL-2003 NER)
FEATURES = ("last", "second_to_last", "sum_last_four", "concat_last_four", "sum_all", "embeddings")
TAGGER_HEADS = ("dense", "bilstm")
TAGGER_OUTPUTS = ("softmax", "crf")
ENCODER_TRAINING = ("trainable", "frozen")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainedTaggerConfig(Checked):
    """Hyperparameters of `build_pretrained_tagger`: a pretrained encoder (keras-hub's `from_preset`) over each
    sentence's word pieces, each word read at its first piece (the other pieces are out of the loss), then a head
    and a tag per word.

    Args:
        family: always "pretrained_tagger".
        preset: the encoder, as for `pretrained_classifier` (a keras-hub preset, an "hf://" handle, or a folder in
            keras-hub's or Hugging Face's format); its tokenizer must be WordPiece (BERT's family).
        features: what a word is read from: "last" (the last layer), "second_to_last", "sum_last_four",
            "concat_last_four", "sum_all" (every layer) or "embeddings" (the input embeddings). An encoder with
            fewer than four layers sums or concatenates the ones it has.
        backbone_training: "trainable" (fine-tune the encoder) or "frozen" (train the head only: with "bilstm",
            the notes' feature-based setting).
        head: "dense" (a tag from each word's features) or "bilstm" (a BiLSTM of `head_units` over the words first).
        head_units: the BiLSTM's units per direction (head "bilstm").
        dropout: dropout on the words' features.
        casing: add an embedding of each word's casing (all lower, initial upper, all upper, numeric, ...) to its
            features, as `rnn_tagger` does: an uncased encoder (all-MiniLM-L6-v2) lower-cases its input, and
            capitals are the strongest cue for a name.
        casing_dim: size of that embedding.
        output: "softmax" or "crf" (a linear-chain CRF over the words, Viterbi-decoded in the export).
        num_tags: set by kpipe from the data.
    """

    family: str = setting("pretrained_tagger", one_of(("pretrained_tagger",)))
    preset: str = "all_minilm_l6_v2_en"
    features: str = setting("last", one_of(FEATURES))
    backbone_training: str = setting("trainable", one_of(ENCODER_TRAINING))
    head: str = setting("dense", one_of(TAGGER_HEADS))
    head_units: int = setting(128, at_least(1))
    dropout: float = setting(0.1, fraction())
    casing: bool = False
    casing_dim: int = setting(16, at_least(1))
    output: str = setting("softmax", one_of(TAGGER_OUTPUTS))
    num_tags: int = setting(2, at_least(2), derived=True)
