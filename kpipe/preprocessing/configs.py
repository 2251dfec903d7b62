"""The preprocessing sections of pipeline configs, one dataclass per kind of input, without TensorFlow.

Kept apart from the code that builds the tf.data pipelines, so a config is parsed and checked
before TensorFlow loads.
"""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, each, one_of, setting
from kpipe.config.strict import check_range
STANDARDIZE = ("lower_and_strip_punctuation", "lower_and_split_punctuation",  # see standardize.py
               "lower_and_split_punctuation_and_contractions", "lower", "none")
SPLITS = ("whitespace", "character")  # TextVectorization's own names
TOKENIZERS = ("words", "wordpiece")
TOKEN_KINDS = ("char", "word", "subword")
TRUNCATING = ("pre", "post", "head_tail")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextPreprocessingConfig(Checked):
    """How raw text becomes padded token ids.

    Args:
        vocabulary_size: most frequent training tokens kept, including the padding and OOV ids.
        sequence_length: maximum tokens per text; longer texts are truncated.
        truncating: "pre" drops tokens from the front (Keras default), "post" from the back, "head_tail"
            from the middle (keeps the first quarter and the last three quarters).
        standardize: "lower_and_strip_punctuation", "lower_and_split_punctuation" (punctuation
            kept as tokens of its own: "great!!" → great ! !), "lower_and_split_punctuation_and_contractions"
            (also "can't" → ca n't, "i'm" → i 'm, as GloVe's vocabulary has them), "lower" or "none".
        split: "whitespace" (words) or "character".
        length_buckets: group texts of similar length into batches, with this many buckets whose
            boundaries are quantiles of the training lengths (0 = pad each batch to its longest).
        tokenizer: "words" (Keras `TextVectorization`: standardize, then split) or "wordpiece"
            (keras-hub `WordPieceTokenizer` with a vocabulary of `vocabulary_size` sub-words computed
            from the training split; lower-cases unless standardize = "none"; ignores `split`).
    """

    vocabulary_size: int = setting(20000, at_least(3))
    sequence_length: int = setting(200, at_least(1))
    truncating: str = setting("pre", one_of(TRUNCATING))
    standardize: str = setting("lower_and_strip_punctuation", one_of(STANDARDIZE))
    split: str = setting("whitespace", one_of(SPLITS))
    length_buckets: int = setting(8, at_least(0))
    tokenizer: str = setting("words", one_of(TOKENIZERS))


@dataclasses.dataclass(frozen=True, kw_only=True)
class WindowConfig(Checked):
    """How a series is cut into (input window, forecast horizon) pairs.

    Args:
        window: time steps the model sees.
        horizon: time steps it forecasts at once (direct multi-horizon output).
        stride: steps between consecutive training windows (validation and test use every origin).
        season_length: the main seasonal period in steps (48 = a day of half-hours, 336 = a week),
            used by the seasonal-naive baseline, the model's seasonal skip and MASE.
        other_seasons: any further (shorter) seasonal periods of the series, e.g. [48] beside a
            weekly season_length of half-hourly data: the MSTL baseline models every season.
    """

    window: int = setting(336, at_least(1))
    horizon: int = setting(48, at_least(1))
    stride: int = setting(1, at_least(1))
    season_length: int = setting(336, at_least(1))
    other_seasons: tuple[int, ...] = setting((), each(at_least(2)))

    @property
    def seasons(self) -> tuple[int, ...]:
        """Every seasonal period of the series, shortest first."""
        return tuple(sorted({self.season_length, *self.other_seasons}))


@dataclasses.dataclass(frozen=True, kw_only=True)
class PairPreprocessingConfig(Checked):
    """How sources and targets become tokens.

    Args:
        source_tokens, target_tokens: "char" (each character), "word" (split on whitespace) or "subword"
            (a WordPiece vocabulary fitted on the training split and kept in the export: any word, case and
            punctuation kept, `¿` and `¡` included; outputs detokenized with text's spacing).
        subword_vocabulary_size: sub-words per vocabulary (special tokens included); fewer when the training
            text has fewer.
        shared_vocabulary: one sub-word vocabulary fitted on both sides, instead of one per language (both sides
            must be "subword").
        lowercase: lower-case sources (targets are kept as they are).
        max_source_length: sources are cut to this many tokens (documented truncation, never an error).
        max_target_length: training targets are cut to this many tokens; decoding stops after it.
        length_buckets: batch pairs of similar length together, with this many buckets whose
            boundaries are quantiles of the longer side's length (0 or 1 = pad each batch of a
            shuffled split to its longest pair; CMUdict's random batches of 128 pad to twice the
            average word).
    """

    source_tokens: str = setting("char", one_of(TOKEN_KINDS))
    target_tokens: str = setting("word", one_of(TOKEN_KINDS))
    lowercase: bool = True
    max_source_length: int = setting(32, at_least(1))
    max_target_length: int = setting(32, at_least(1))
    length_buckets: int = setting(0, at_least(0))
    subword_vocabulary_size: int = setting(8000, at_least(16))
    shared_vocabulary: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.shared_vocabulary and not (self.source_tokens == self.target_tokens == "subword"):
            raise ValueError("`shared_vocabulary` needs source_tokens = target_tokens = 'subword'. Received: "
                             f"source_tokens={self.source_tokens!r}, target_tokens={self.target_tokens!r}")

    @property
    def sentences(self) -> bool:
        """Both sides are words or sub-words (translation, scored by BLEU and chrF), not characters (spelling
        to phonemes, scored by error rates)."""
        return self.source_tokens != "char" and self.target_tokens != "char"


@dataclasses.dataclass(frozen=True, kw_only=True)
class SkipGramConfig(Checked):
    """How a corpus becomes skip-gram training examples.

    Args:
        min_count: words seen fewer times are dropped.
        max_vocabulary: keep at most this many words, most frequent first (0 = no cap).
        window: maximum distance between a target and a context word.
        negatives: noise words per (target, context) pair.
        negatives_shared_by: consecutive (shuffled) pairs that share one draw of the `negatives` noise
            words (1: a draw per pair, as word2vec; larger groups make the noise scores one matrix
            product and touch far fewer rows per step). `training.batch_size` must be a multiple of it.
        subsample: the frequency threshold t of subsampling (0 = keep every token).
        lowercase: lower-case the text before splitting it into words.
    """

    min_count: int = setting(5, at_least(1))
    max_vocabulary: int = setting(0, at_least(0))
    window: int = setting(5, at_least(1))
    negatives: int = setting(5, at_least(1))
    negatives_shared_by: int = setting(1, at_least(1))
    subsample: float = setting(1e-3, at_least(0.0))
    lowercase: bool = True


@dataclasses.dataclass(frozen=True, kw_only=True)
class NamesPreprocessingConfig(Checked):
    """How names become character ids.

    Args:
        max_length: longest name (in characters) trained on and generated; longer names are dropped.
        lowercase: lower-case names first (fewer characters to learn; generated names are then
            capitalised).
    """

    max_length: int = setting(20, at_least(2))
    lowercase: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaggingPreprocessingConfig(Checked):
    """How a sentence's words become a tagger's inputs (`kpipe.preprocessing.tagging`).

    Args:
        lowercase: look words up lower-cased (as GloVe's vocabulary is); the characters and the casing feature
            keep the case.
        vocabulary_size: the most frequent training words kept (the rest read as unknown), with the pretrained
            vectors' words when the model starts from some.
        min_count: a training word kept needs this many occurrences.
        max_word_length: characters of a word the character features read (longer words are cut).
        sequence_length: (pretrained_tagger) word pieces per window, [CLS] and [SEP] included; a longer sentence
            is read in overlapping windows, never cut.
        stride: (pretrained_tagger) word pieces between the starts of two windows of a sentence too long for one.
    """

    lowercase: bool = True
    vocabulary_size: int = setting(50000, at_least(3))
    min_count: int = setting(1, at_least(1))
    max_word_length: int = setting(20, at_least(1))
    sequence_length: int = setting(128, at_least(8))
    stride: int = setting(64, at_least(1))

    def __post_init__(self):
        super().__post_init__()
        check_range("stride", self.stride, high=self.sequence_length - 2)  # the room a window has beside [CLS], [SEP]


@dataclasses.dataclass(frozen=True, kw_only=True)
class LanguageModelPreprocessingConfig(Checked):
    """How a language model's text becomes tokens (`kpipe.preprocessing.byte_bpe`).

    Args:
        vocabulary_size: tokens of the byte-level BPE learnt on the training split (256 bytes, the end-of-text token
            and the merges).
        sequence_length: tokens the model reads at once: training windows, and the most a prompt plus its
            continuation can hold.
        stride: tokens between the starts of two windows when a text longer than the context is scored: each
            window after the first scores only its last `stride` tokens, read after the ones before them, so every
            token but the first window's has at least `sequence_length - stride` tokens of context (0: half the
            sequence_length; sequence_length: consecutive windows, each starting afresh).
    """

    vocabulary_size: int = setting(8000, at_least(300))
    sequence_length: int = setting(128, at_least(8))
    stride: int = setting(0, at_least(0))

    def __post_init__(self):
        super().__post_init__()
        check_range("stride", self.stride, high=self.sequence_length)

    @property
    def score_stride(self) -> int:
        """The stride that scoring uses (`stride`, or half the sequence_length when 0)."""
        return self.stride or max(1, self.sequence_length // 2)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AnswerPreprocessingConfig(Checked):
    """How a question and its context become the encoder's windows (`kpipe.preprocessing.answer_windows`).

    Args:
        sequence_length: word pieces per window, special tokens included: [CLS] question [SEP] context [SEP].
        stride: word pieces between the starts of two windows of a context too long for one (BERT's
            `doc_stride`); at most the room a window leaves the context, so no piece is skipped.
        max_question_tokens: a question's word pieces kept (its first ones).
        max_answer_tokens: the longest answer decoded, in word pieces.
    """

    sequence_length: int = setting(384, at_least(16))
    stride: int = setting(128, at_least(1))
    max_question_tokens: int = setting(64, at_least(1))
    max_answer_tokens: int = setting(30, at_least(1))

    def __post_init__(self):
        super().__post_init__()
        room = self.sequence_length - self.max_question_tokens - 3
        if self.stride > room:
            raise ValueError(f"`stride` must be at most the {room} context pieces a window holds beside "
                             f"max_question_tokens={self.max_question_tokens} and the 3 special tokens, or windows "
                             f"would skip pieces. Received: stride={self.stride}")
