"""A language model's byte-level BPE (`kpipe.preprocessing.byte_bpe`) as Hugging Face's `tokenizers` applies it:
the tokenizer kpipe encodes prompts and splits with, and what a portable export tokenizes with (no TensorFlow)."""

from __future__ import annotations


def fast_tokenizer(vocabulary: dict[str, int], merges: list[str]):
    """A `tokenizers.Tokenizer` with this vocabulary and these merges ("a b" strings, in rank order), byte-level:
    every string round-trips."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.BPE(vocabulary, [tuple(m.split(" ")) for m in merges]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer
