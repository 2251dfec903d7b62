"""The translator export: a `translate` signature, raw strings in, decoded strings and attention weights out;
the members of an ensemble are saved beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import keras
import tensorflow as tf

from kpipe.evaluation import reporting
from kpipe.portable.export_files import KERAS_MODEL_FILE, TRANSLATOR_FILE
from kpipe.exports import run_files, saved_model
from kpipe.exports.open import call_in_batches
from kpipe.families.seq2seq_attention.config import Seq2SeqConfig
from kpipe.families.seq2seq_decoding import decode
from kpipe.families.seq2seq_attention.model import Seq2SeqParts
from kpipe.preprocessing.configs import PairPreprocessingConfig
from kpipe.preprocessing.token_pairs import TokenTable, pad_batch, source_ids
from kpipe.tasks.translate.families import parts_of


class Translator(tf.Module):
    """Raw strings → decoded strings and attention weights, preprocessing and decoding in one graph.

    Given several models' parts (an ensemble trained on the same vocabularies), they decode together:
    their next-token log-probabilities are summed; the attention returned is the first model's.
    """

    def __init__(self, parts: Seq2SeqParts | Sequence[Seq2SeqParts], source_table: TokenTable,
                 target_table: TokenTable, pre: PairPreprocessingConfig, model_config: Seq2SeqConfig):
        super().__init__()
        self.parts = tuple([parts] if hasattr(parts, "step") else parts)
        self.model = self.parts[0].model
        self.models = [member.model for member in self.parts]  # tracked: the SavedModel keeps every member
        self.source_table, self.target_table = source_table, target_table
        self.pre, self.beam_width, self.length_penalty = pre, model_config.beam_width, model_config.length_penalty
        self.translate = tf.function(self._translate, input_signature=[tf.TensorSpec([None], tf.string, name="text")])

    def _translate(self, text):
        ids = pad_batch(source_ids(text, self.source_table, self.pre))
        decoded, attention = decode(self.parts, ids, self.pre.max_target_length, self.beam_width,
                                    self.length_penalty)
        empty = tf.equal(tf.strings.length(tf.strings.strip(text)), 0)
        output = tf.where(empty, "", self.target_table.join(decoded))  # empty in, empty out
        return {"output": output, "attention": attention}


def translate_batches(translator: Translator, texts: list[str], batch_size: int = 256) -> tuple[list[str], list]:
    """Decode many strings in batches: outputs, and each one's attention trimmed to its lengths."""
    results = call_in_batches(lambda batch: translator.translate(tf.constant(batch)), texts, batch_size=batch_size)
    outputs = [o.decode("utf-8") for result in results for o in result["output"].numpy()]
    return outputs, [a for result in results for a in result["attention"].numpy()]


def member_file(number: int) -> str:
    """The file of an exported ensemble's member `number` (1-based) beside the SavedModel."""
    return KERAS_MODEL_FILE if number == 1 else f"member{number}.keras"


def load_members(export_dir: str | Path) -> list[Seq2SeqParts]:
    """The Keras models of an export (one, or an ensemble's members in their decoding order), as parts."""
    paths = [Path(export_dir) / member_file(1)]
    while (Path(export_dir) / member_file(len(paths) + 1)).is_file():
        paths.append(Path(export_dir) / member_file(len(paths) + 1))
    return [parts_of(keras.saving.load_model(path)) for path in paths]


def write_translator_export(path: Path, *, members: Sequence[Seq2SeqParts], translator: Translator, config,
                            metrics: dict, history: list[dict], work_dir: Path,
                            tables: tuple[TokenTable, TokenTable], examples: tuple[list, list, list]) -> None:
    """The SavedModel (`translate`), the run files, the other ensemble members beside the first (best) one's
    model.keras, an attention plot of the first test examples, and the token tables."""
    model = members[0].model
    pre: PairPreprocessingConfig = config.preprocessing
    source_table, target_table = tables
    sources, outputs, attention = examples
    saved_model.write_saved_model(path, tracked=[model, translator], endpoints={"translate": translator.translate})
    run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    for number, member in enumerate(members[1:], start=2):
        member.model.save(path / member_file(number))
    shown = range(min(4, len(sources)))
    reporting.plot_attention([(source_table.pieces(sources[i], pre.source_tokens, pre.lowercase),
                               target_table.pieces(outputs[i], pre.target_tokens), attention[i]) for i in shown],
                             path / "attention.png")
    reporting.write_json({"source_tokens": pre.source_tokens, "target_tokens": pre.target_tokens,
                          "lowercase": pre.lowercase, "max_source_length": pre.max_source_length,
                          "max_target_length": pre.max_target_length,
                          "source_vocabulary": source_table.tokens, "target_vocabulary": target_table.tokens},
                         path / TRANSLATOR_FILE)
