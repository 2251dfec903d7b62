"""Reserved token ids: one scheme per kind of model, named once here.

Preprocessing (which makes the ids) and models (which mask, start, stop and never sample them)
both read them from this module; neither imports the other for them.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ReservedIds:
    """The ids below `count` that stand for no real token; real tokens start at `count`."""

    pad: int
    unknown: int
    start: int
    end: int

    @property
    def count(self) -> int:
        return 4

    @property
    def never_emitted(self) -> tuple[int, int, int]:
        """The ids a model never outputs (its training never targets them): padding, unknown and start."""
        return self.pad, self.unknown, self.start


# Sequence to sequence (kpipe.preprocessing.token_pairs, kpipe.families.seq2seq_attention.model).
SEQ2SEQ = ReservedIds(pad=0, unknown=1, start=2, end=3)

# Character-level name generators (kpipe.tasks.generate, kpipe.families.char_rnn.model).
CHARS = ReservedIds(pad=0, start=1, end=2, unknown=3)

# WordPiece sub-words (keras-hub's tokenizer, the transformer classifier, masked-LM pretraining):
# the vocabulary starts with these, in this order, so padding stays 0.
WORDPIECE_RESERVED = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
WORDPIECE_CLS = WORDPIECE_RESERVED.index("[CLS]")
WORDPIECE_MASK = WORDPIECE_RESERVED.index("[MASK]")

# Whole words (Keras' TextVectorization): "" for padding, then the out-of-vocabulary token.
WORD_RESERVED = ["", "[UNK]"]

# A word's casing class, as taggers read it (kpipe.preprocessing.tagging.casing_ids makes them; both tagger families
# embed them): 0 padding, the five patterns of kpipe.preprocessing.tagging.CASING_PATTERNS, then "other".
CASING_CLASSES = 7
