"""Decoding and scoring during and after training: BLEU/chrF for sentences, error rates for symbols, the
per-epoch validation decoding callback and checkpoint averaging.
"""

from __future__ import annotations

import logging
from typing import Callable

import keras

from kpipe.evaluation.sequence_metrics import corpus_bleu, error_rates
from kpipe.tasks.translate.signatures import Translator, translate_batches
from kpipe.training.checkpoint_averaging import EpochWeights, averaged_weights

log = logging.getLogger(__name__)


def split_tokens(text: str, kind: str) -> list[str]:
    return list(text) if kind == "char" else text.split()


def tokenized(outputs: list[str], sources: list[str], references: dict[str, list[str]], kind: str):
    """(outputs as token lists, each source's references as token lists), as the error rates take them."""
    return [split_tokens(o, kind) for o in outputs], [[split_tokens(r, kind) for r in references[s]] for s in sources]


def score_outputs(outputs: list[str], sources: list[str], references: dict[str, list[str]], kind: str) -> dict:
    """Word and token error rates of `outputs` (one per source) against each source's references."""
    return error_rates(*tokenized(outputs, sources, references, kind))


def decode_and_score(translator: Translator, references: dict[str, list[str]], kind: str) -> dict:
    """Decode every source of `references` with `translator` and score the outputs (word and token error rates)."""
    sources = list(references)
    outputs, _ = translate_batches(translator, sources)
    return score_outputs(outputs, sources, references, kind)


class ValidationDecoding(keras.callbacks.Callback):
    """After every epoch, decodes the validation sources (greedy) and adds `val_word_error_rate` and
    `val_token_error_rate` (and for sentences `val_bleu`, sacreBLEU on a fixed sample) to the epoch's logs:
    in the history and report beside the loss, and what early stopping can watch (`training.early_stopping_monitor = "val_word_error_rate"`), keeping the
    epoch that decodes best rather than the one with the lowest loss.

    Args:
        make_translator: the training model → a `Translator` on its (live) weights; made once.
        references: validation source → its acceptable outputs.
        kind: "char" or "word", how the outputs are split into tokens.
    """

    def __init__(self, make_translator: Callable[[keras.Model], "Translator"], references: dict[str, list[str]],
                 kind: str, bleu_sample: int = 0, sentences: bool = False):
        super().__init__()
        self.make_translator, self.kind = make_translator, kind
        # Sentences: BLEU on a fixed sample of the validation sources (the first `bleu_sample`, in split
        # order), fast enough for every epoch; for characters the whole split's error rates.
        self.bleu = sentences and bleu_sample > 0
        self.references = dict(list(references.items())[:bleu_sample]) if self.bleu else references
        self.translator = None

    def on_epoch_end(self, epoch, logs=None):
        if self.translator is None:
            self.translator = self.make_translator(self.model)
        sources = list(self.references)
        outputs, _ = translate_batches(self.translator, sources)
        scores = score_outputs(outputs, sources, self.references, self.kind)
        logs["val_word_error_rate"] = scores["word_error_rate"]
        logs["val_token_error_rate"] = scores["token_error_rate"]
        if self.bleu:
            logs["val_bleu"] = corpus_bleu(outputs, [self.references[s] for s in sources])


def average_epochs(model: keras.Model, best: int, epoch_weights: EpochWeights, count: int,
                    translator: "Translator", references: dict[str, list[str]], kind: str) -> dict | None:
    """Average the weights of the `count` epochs ending at `best` (the epoch training kept), score the
    average and the kept weights on the validation split (greedy), and leave `model` holding the better."""
    epochs = [e for e in range(max(1, best - count + 1), best + 1) if epoch_weights.path(e).is_file()]
    if len(epochs) < 2:
        log.info("Checkpoint averaging skipped: fewer than two saved epochs up to the kept epoch %d", best)
        return None
    def validation_wer() -> float:
        return decode_and_score(translator, references, kind)["word_error_rate"]

    kept = model.get_weights()
    mean = averaged_weights(model, [epoch_weights.path(e) for e in epochs])
    model.set_weights(kept)
    kept_rate = validation_wer()
    model.set_weights(mean)
    mean_rate = validation_wer()
    use_mean = mean_rate < kept_rate
    if not use_mean:
        model.set_weights(kept)
    log.info("Checkpoint averaging of epochs %s: validation WER %.2f%% (epoch %d alone %.2f%%): keeping %s",
             epochs, 100 * mean_rate, best, 100 * kept_rate, "the average" if use_mean else f"epoch {best}")
    return {"epochs": epochs, "val_word_error_rate_averaged": mean_rate, "val_word_error_rate_best_epoch": kept_rate,
            "kept": "average" if use_mean else "best epoch"}
