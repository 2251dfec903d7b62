"""Raw strings -> the inputs of a pretrained backbone, and the tf.data pipeline that feeds fine-tuning.

The preset's preprocessor tokenizes, adds the special tokens and pads every text to the configured
length (long texts cut as `preprocessing.truncating` says); each batch is then cut back to its longest
text, and training batches group texts of similar length (length buckets), so most tweets cost ~40
positions instead of the full length.
The same `encode` runs in the exported SavedModel, so serving sees exactly the training inputs.

Pairs of texts ((batch, 2) strings) are packed as the checkpoint was pretrained on them: `[CLS] first [SEP]
second [SEP]` with segment ids 0 and 1 (BERT-style presets); a pair too long is cut by keras-hub's round-robin
packer, which takes word pieces off the longer text first, each text keeping its first word pieces.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.text import example_rows, string_tensor, truncate, vectorize
from kpipe.pretrained import presets
from kpipe.preprocessing.prefetch import prefetched


class TruncatingPreprocessor(tf.Module):
    """A preset's preprocessor that cuts long texts kpipe's way (`preprocessing.truncating`).

    keras-hub keeps a long text's first word pieces ("post"); "pre" keeps its last ones and "head_tail"
    its first quarter and last three quarters, as kpipe's own pipelines do. The tokenizer, special tokens,
    padding and output names stay the preset's: the texts are tokenized, cut to what fits beside the
    special tokens, then packed by the preset's own packer.
    """

    def __init__(self, preprocessor, truncating: str):
        super().__init__()
        self.preprocessor, self.truncating = preprocessor, truncating
        empty = preprocessor(tf.constant([""]))  # the special tokens an empty text gets, and the output names
        self.special_tokens = int(tf.reduce_sum(tf.cast(empty["padding_mask"], tf.int32)))
        self.names = sorted(empty)

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    @property
    def sequence_length(self) -> int:
        return self.preprocessor.sequence_length

    def __call__(self, x: tf.Tensor | tuple[tf.Tensor, tf.Tensor]) -> dict[str, tf.Tensor]:
        texts = x  # named as the preset preprocessor's argument, so `pack` calls both alike
        if isinstance(texts, tuple):  # a pair: the packer's round robin cuts the longer text first
            ids = tuple(vectorize(self.tokenizer, t) for t in texts)
        else:
            ids = (truncate(vectorize(self.tokenizer, texts), self.sequence_length - self.special_tokens,
                            self.truncating),)
        token_ids, segment_ids = self.preprocessor.packer(ids)
        outputs = {"token_ids": token_ids, "segment_ids": segment_ids,
                   "padding_mask": tf.not_equal(token_ids, self.tokenizer.pad_token_id)}
        return {name: outputs[name] for name in self.names}


def with_truncation(preprocessor, truncating: str):
    """The preset's preprocessor as it is for "post" (what keras-hub does), else a TruncatingPreprocessor."""
    return preprocessor if truncating == "post" else TruncatingPreprocessor(preprocessor, truncating)


def portable_settings(preprocessor, truncating: str) -> dict | None:
    """What a runtime without TensorFlow needs to tokenize and pack texts as `preprocessor` does
    (`kpipe.portable.wordpiece`), or None for tokenizers other than WordPiece (BPE, SentencePiece)."""
    import keras_hub

    tokenizer = preprocessor.tokenizer
    if not isinstance(tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
        return None
    preset_preprocessor = getattr(preprocessor, "preprocessor", preprocessor)
    if preset_preprocessor.packer is None:  # keras-hub builds it on the first call
        preset_preprocessor(tf.constant([""]))
    packer = preset_preprocessor.packer
    return wordpiece_settings(tokenizer, {"sequence_length": int(packer.sequence_length),
                                          "start_value": list(packer.start_value),
                                          "end_value": list(packer.end_value), "pad_value": int(packer.pad_value)},
                              truncating)


def wordpiece_settings(tokenizer, packer: dict, truncating: str) -> dict:
    """A keras-hub `WordPieceTokenizer`'s settings and how its ids are packed (`sequence_length` at most, with
    `start_value`/`end_value` ids around them, `pad_value` after), as `kpipe.portable.wordpiece` reads them."""
    config = tokenizer.get_config()
    return {"tokenizer": {key: config[key] for key in ("lowercase", "strip_accents", "split", "suffix_indicator",
                                                        "oov_token")}
            | {"split_on_cjk": bool(getattr(tokenizer, "split_on_cjk", True)),
               "special_tokens": list(config.get("special_tokens") or [])},
            "packer": packer, "truncating": truncating}


def load_run_preprocessor(preset: str, pre: TextPreprocessingConfig):
    """The preset's preprocessor as a run's `[preprocessing]` asks: `sequence_length` tokens at most (special
    tokens included), a longer text cut as `truncating` says.

    Raises:
        PresetUnavailableError: the preset is not on this machine (see `presets.load_backbone`).
    """
    return with_truncation(presets.load_preprocessor(preset, pre.sequence_length), pre.truncating)


def pack(preprocessor, texts: tf.Tensor) -> dict[str, tf.Tensor]:
    """The preprocessor's outputs for (batch,) strings, or for (batch, 2) pairs given as segments (first,
    second). By keyword: keras-hub's preprocessors read a positional tuple as (x, y), texts and labels."""
    return preprocessor(x=(texts[:, 0], texts[:, 1]) if len(texts.shape) == 2 else texts)


def trim_to_longest(inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The backbone inputs (each (batch, length)) cut to the longest text's tokens (right padding), as int32."""
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(inputs["padding_mask"], tf.int32), axis=1))
    return {name: tf.cast(value[:, :longest], tf.int32) for name, value in inputs.items()}


def encode(preprocessor, texts: tf.Tensor) -> dict[str, tf.Tensor]:
    """(batch,) raw strings (or (batch, 2) pairs) -> the backbone's inputs, (batch, longest) each, as the
    backbone's dtypes."""
    return trim_to_longest(pack(preprocessor, texts))


def token_lengths(texts: np.ndarray, preprocessor, batch_size: int = 1024) -> np.ndarray:
    """Tokens per text, special tokens included, capped at the preprocessor's sequence length."""
    lengths = [np.sum(np.asarray(pack(preprocessor, string_tensor(texts[i:i + batch_size]))["padding_mask"]),
                      axis=1)
               for i in range(0, len(texts), batch_size)]
    return np.concatenate(lengths) if lengths else np.zeros(0, int)


def make_pretrained_dataset(texts: np.ndarray, labels: np.ndarray, preprocessor, *, batch_size: int,
                            shuffle: bool = False, seed: int = 0,
                            boundaries: list[int] | tuple[int, ...] = ()) -> tf.data.Dataset:
    """A tf.data pipeline of (backbone inputs, label) batches for a pretrained encoder.

    Texts are tokenized once and cached; then (optionally) shuffled with `seed`, batched (by length
    bucket when `boundaries` is given) and cut to each batch's longest text.

    Returns:
        Dataset of ({"token_ids", "padding_mask", ...: (batch, time)}, int32 (batch,)), ending in prefetch.
    """
    ds, in_memory = example_rows(texts, labels, tf.int32)
    ds = ds.batch(1024).map(lambda t, y: (pack(preprocessor, t), y), num_parallel_calls=tf.data.AUTOTUNE).unbatch()
    if in_memory:  # streamed rows (see `example_rows`) are neither cached nor shuffled here
        ds = ds.cache()
    if shuffle and in_memory:
        ds = ds.shuffle(len(labels), seed=seed, reshuffle_each_iteration=True)
    if boundaries:
        ds = ds.bucket_by_sequence_length(
            element_length_func=lambda x, _: tf.reduce_sum(tf.cast(x["padding_mask"], tf.int32)),
            bucket_boundaries=list(boundaries), bucket_batch_sizes=[batch_size] * (len(boundaries) + 1))
    else:
        ds = ds.batch(batch_size)
    return prefetched(ds.map(lambda x, y: (trim_to_longest(x), y)))
