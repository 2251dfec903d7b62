"""The `pretrained_tagger` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range

# Which of the encoder's outputs a word is read from (the lecture notes' table of BERT features for CoNLL-2003 NER)
FEATURES = ("last", "second_to_last", "sum_last_four", "concat_last_four", "sum_all", "embeddings")
TAGGER_HEADS = ("dense", "bilstm")
TAGGER_OUTPUTS = ("softmax", "crf")
ENCODER_TRAINING = ("trainable", "frozen")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainedTaggerConfig:
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
        output: "softmax" or "crf" (a linear-chain CRF over the words, Viterbi-decoded in the export).
        num_tags: set by kpipe from the data.
    """

    family: str = "pretrained_tagger"
    preset: str = "all_minilm_l6_v2_en"
    features: str = "last"
    backbone_training: str = "trainable"
    head: str = "dense"
    head_units: int = 128
    dropout: float = 0.1
    output: str = "softmax"
    num_tags: int = dataclasses.field(default=2, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("pretrained_tagger",))
        check_choice("features", self.features, FEATURES)
        check_choice("backbone_training", self.backbone_training, ENCODER_TRAINING)
        check_choice("head", self.head, TAGGER_HEADS)
        check_range("head_units", self.head_units, low=1)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("output", self.output, TAGGER_OUTPUTS)
        check_range("num_tags", self.num_tags, low=2)
