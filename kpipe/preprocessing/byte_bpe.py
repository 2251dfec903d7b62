"""A byte-level BPE tokenizer learnt on the training split (GPT-2's scheme): every string round-trips exactly,
spaces, newlines and emoji included, so a language model scores and writes any text.

Hugging Face's `tokenizers` learns the merges and tokenizes training text fast; the export applies the same
vocabulary and merges with keras-hub's `BytePairTokenizer` inside the graph, and the two give equal ids
(tests/unit/preprocessing/test_byte_bpe.py).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

END_OF_TEXT = "<|endoftext|>"  # id 0: starts every document, ends every generation


@dataclasses.dataclass(frozen=True)
class ByteBPE:
    """A learnt vocabulary (token -> id, `END_OF_TEXT` first) and its merges ("a b" strings, in rank order)."""

    vocabulary: dict[str, int]
    merges: list[str]

    @classmethod
    def learn(cls, texts: list[str], vocabulary_size: int) -> "ByteBPE":
        """Merges learnt on `texts` until the vocabulary has `vocabulary_size` tokens (fewer for a small text)."""
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=vocabulary_size, special_tokens=[END_OF_TEXT], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tokenizer.train_from_iterator(texts, trainer)
        model = json.loads(tokenizer.to_str())["model"]
        merges = [" ".join(pair) if isinstance(pair, list) else pair for pair in model["merges"]]
        return cls(dict(model["vocab"]), merges)

    @functools.cached_property
    def _fast(self):
        """Hugging Face's tokenizer with this vocabulary and these merges, built once per ByteBPE (the merges take
        a moment to load; `encode` and `decode` run for every split and prompt)."""
        from kpipe.portable.byte_bpe import fast_tokenizer

        return fast_tokenizer(self.vocabulary, self.merges)

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids (no `END_OF_TEXT`)."""
        return [encoding.ids for encoding in self._fast.encode_batch(texts)]

    def decode(self, ids: list[int]) -> str:
        return self._fast.decode(ids, skip_special_tokens=False)

    @property
    def size(self) -> int:
        return len(self.vocabulary)

    @property
    def end_of_text(self) -> int:
        return self.vocabulary[END_OF_TEXT]

    def in_graph(self):
        """keras-hub's `BytePairTokenizer` with this vocabulary and these merges (imports TensorFlow)."""
        import keras_hub

        return keras_hub.tokenizers.BytePairTokenizer(vocabulary=self.vocabulary, merges=self.merges,
                                                      unsplittable_tokens=[END_OF_TEXT])

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"vocabulary": self.vocabulary, "merges": self.merges}, ensure_ascii=False),
                        encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> "ByteBPE":
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(saved["vocabulary"], saved["merges"])
