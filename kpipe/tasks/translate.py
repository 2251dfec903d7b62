"""Sequence-to-sequence end to end: pairs → token ids → attention encoder-decoder → WER/PER → SavedModel.

The export has a `translate` signature: a batch of raw strings → {"output": decoded strings,
"attention": weights (batch, target_steps, source_steps)}, loadable with plain
`tf.saved_model.load(path).translate(tf.constant([...]))`. Characters or words the model never saw
map to the unknown token; an empty input gives an empty output; inputs longer than
`preprocessing.max_source_length` tokens are cut to their first `max_source_length` tokens.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Callable, Sequence

import keras
import tensorflow as tf

from kpipe.exports import run_files, saved_model
from kpipe.exports.open import call_in_batches, open_export

from kpipe.evaluation import reporting
from kpipe.training.checkpoint_averaging import EpochWeights, averaged_weights
from kpipe.datasets.pairs import PairSplits, load_pairs
from kpipe.models.seq2seq import Seq2SeqConfig, Seq2SeqParts, build_seq2seq
from kpipe.models.seq2seq_decoding import decode
from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.preprocessing.token_pairs import (
    PairPreprocessingConfig,
    TokenTable,
    fit_tables,
    lengths,
    make_pair_dataset,
    pad_batch,
    source_ids,
)
from kpipe.training.run import Run
from kpipe.training.loop import kept_epoch
from kpipe.evaluation.sequence_metrics import corpus_bleu, corpus_chrf, error_analysis, error_rates, sentence_bleu

log = logging.getLogger(__name__)

TRANSLATOR_FILE = "translator.json"


class _OwnTracesFilter(logging.Filter):
    """Drops TensorFlow's retracing warning about Translators: each one (per ensemble member, per validation
    check, the exported one) traces its graph once, on purpose; TensorFlow counts all of them as retraces of
    one method and warns after five."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("Translator._translate" in message and "retracing" in message)


def _quiet_own_retraces() -> None:
    """Install `_OwnTracesFilter` on TensorFlow's logger once (when translators are built, not on import)."""
    logger = tf.get_logger()
    if not any(isinstance(f, _OwnTracesFilter) for f in logger.filters):
        logger.addFilter(_OwnTracesFilter())


class Translator(tf.Module):
    """Raw strings → decoded strings and attention weights, preprocessing and decoding in one graph.

    Given several models' parts (an ensemble trained on the same vocabularies), they decode together:
    their next-token log-probabilities are summed; the attention returned is the first model's.
    """

    def __init__(self, parts: Seq2SeqParts | Sequence[Seq2SeqParts], source_table: TokenTable,
                 target_table: TokenTable, pre: PairPreprocessingConfig, model_config: Seq2SeqConfig):
        super().__init__()
        self.parts = tuple([parts] if isinstance(parts, Seq2SeqParts) else parts)
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


def _tokens(text: str, kind: str) -> list[str]:
    return list(text) if kind == "char" else text.split()


def tokenized(outputs: list[str], sources: list[str], references: dict[str, list[str]], kind: str):
    """(outputs as token lists, each source's references as token lists), as the error rates take them."""
    return [_tokens(o, kind) for o in outputs], [[_tokens(r, kind) for r in references[s]] for s in sources]


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


def _average_epochs(model: keras.Model, best: int, epoch_weights: EpochWeights, count: int,
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


# === Running the pipeline ===

def run_translate(config: PipelineConfig) -> RunResult:
    """Train an attention encoder-decoder on pairs, score it on the test split and export it."""
    _quiet_own_retraces()
    with Run(config) as run:
        return _run_translate(run, config)


@dataclasses.dataclass
class TrainedMember:
    """One trained encoder-decoder of a translate run (an ensemble has several)."""

    parts: Seq2SeqParts
    history: list[dict]
    seed: int
    checkpoint_averaging: dict | None


def _run_translate(run: Run, config: PipelineConfig) -> RunResult:
    pre: PairPreprocessingConfig = config.preprocessing
    splits: PairSplits = load_pairs(config.data)
    source_table, target_table = fit_tables([s for s, _ in splits.train], [t for _, t in splits.train], pre,
                                            cache_dir=run.export_root / ".cache")
    too_long = int((lengths([s for s, _ in splits.train], source_table, pre.source_tokens, pre.lowercase)
                    > pre.max_source_length).sum())
    log.info("Tokens: %d source, %d target; %d training sources longer than %d tokens are cut",
             len(source_table.tokens), len(target_table.tokens), too_long, pre.max_source_length)
    model_config: Seq2SeqConfig = dataclasses.replace(
        config.model, source_vocabulary_size=source_table.size, target_vocabulary_size=target_table.size)
    greedy = dataclasses.replace(model_config, beam_width=1)  # validation decoding: fast, and what is compared

    def make_translator(parts, decoding: Seq2SeqConfig = greedy) -> Translator:
        return Translator(parts, source_table, target_table, pre, decoding)

    count = model_config.ensemble_members
    trained = []
    for index in range(count):
        if count > 1:
            log.info("Ensemble member %d of %d (seed %d)", index + 1, count, config.training.seed + index)
        trained.append(_train_member(run, config, model_config, splits, source_table, target_table, make_translator,
                                     index=index, subdir=f"member{index + 1}" if count > 1 else ""))
    members, ensemble = (_choose_members(trained, make_translator, splits.references("validation"), pre.target_tokens)
                         if count > 1 else (trained, None))
    model = members[0].parts.model
    history = [{**h, "member": number} if count > 1 else h for number, m in enumerate(trained, 1) for h in m.history]
    averaged = (trained[0].checkpoint_averaging if count == 1
                else [m.checkpoint_averaging for m in trained] if model_config.average_epochs > 1 else None)
    translator = make_translator([m.parts for m in members], model_config)

    # === Test split: every distinct source once, right if the output matches any reference ===
    references = splits.references("test")
    sources = list(references)
    started = time.perf_counter()
    outputs, attention = translate_batches(translator, sources)
    decode_seconds = time.perf_counter() - started
    hypotheses, reference_tokens = tokenized(outputs, sources, references, pre.target_tokens)
    scores = error_rates(hypotheses, reference_tokens)
    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), **splits.sizes(), "test_sources": len(sources)},
        "word_error_rate": scores["word_error_rate"],
        "token_error_rate": scores["token_error_rate"],
        "decoding": "greedy" if model_config.beam_width == 1 else f"beam {model_config.beam_width}",
        "error_analysis": error_analysis(sources, hypotheses, reference_tokens),
        "decode_seconds": round(decode_seconds, 2),
        "checkpoint_averaging": averaged,
        **({"ensemble": ensemble} if ensemble else {}),
        "examples": [{"source": s, "output": o, "references": references[s]} for s, o in
                     list(zip(sources, outputs))[:20]],
    }
    if pre.sentences:  # words or sub-words on both sides: scored as translations are
        metrics["bleu"] = corpus_bleu(outputs, [references[s] for s in sources])  # sacreBLEU, 0-100
        metrics["chrf"] = corpus_chrf(outputs, [references[s] for s in sources])
        sentence_scores = [sentence_bleu(o, references[s]) for o, s in zip(outputs, sources)]
        worst = sorted(range(len(sources)), key=sentence_scores.__getitem__)[:20]
        metrics["worst_translations"] = [{"source": sources[i], "output": outputs[i], "references": references[sources[i]],
                                          "sentence_bleu": round(sentence_scores[i], 2)} for i in worst]
    log.info("Test: word error rate %.2f%%, %s error rate %.2f%% on %d sources (%s decoding, %.1f s)",
             100 * scores["word_error_rate"], "phoneme" if config.data.source == "embedded" else "token",
             100 * scores["token_error_rate"], len(sources), metrics["decoding"], decode_seconds)

    shown = list(range(min(4, len(sources))))

    def write(path: Path) -> None:
        saved_model.write_saved_model(path, tracked=[model, translator], endpoints={"translate": translator.translate})
        run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=run.work_dir)
        for number, member in enumerate(members[1:], start=2):  # model.keras is the first (best) member
            member.parts.model.save(path / member_file(number))
        reporting.plot_attention([(source_table.pieces(sources[i], pre.source_tokens, pre.lowercase),
                                   target_table.pieces(outputs[i], pre.target_tokens), attention[i]) for i in shown],
                                 path / "attention.png")
        reporting.write_json({"source_tokens": pre.source_tokens, "target_tokens": pre.target_tokens,
                              "lowercase": pre.lowercase, "max_source_length": pre.max_source_length,
                              "max_target_length": pre.max_target_length,
                              "source_vocabulary": source_table.tokens, "target_vocabulary": target_table.tokens},
                             path / TRANSLATOR_FILE)

    version_dir = run.publish(write, data=splits.train)
    examples = ", ".join(f"{s} → {o}" for s, o in list(zip(sources, outputs))[:3])
    scored = (f"Test BLEU {metrics['bleu']:.2f}, chrF {metrics['chrf']:.2f} (sacreBLEU, every translation of a "
              f"source a reference) on {len(sources)} sources" if "bleu" in metrics else
              f"Test word error rate {100 * scores['word_error_rate']:.2f}%, token error rate "
              f"{100 * scores['token_error_rate']:.2f}% on {len(sources)} sources")
    summary = (f"{scored}\nExamples: {examples}\n"
               f"Exported to {version_dir} (report: metrics.json, attention.png)\n"
               f'Try: kpipe translate {version_dir} "{sources[0]}"')
    return RunResult(version_dir, metrics, summary)


def _train_member(run: Run, config: PipelineConfig, model_config: Seq2SeqConfig, splits: PairSplits,
                  source_table: TokenTable, target_table: TokenTable,
                  translator: Callable[[Seq2SeqParts], Translator], *, index: int, subdir: str) -> TrainedMember:
    """Train one encoder-decoder with seed `training.seed + index` (initial weights and batch order), its
    resumable state in the run's work folder or `subdir` of it; the epoch kept by validation."""
    pre = config.preprocessing
    seed = config.training.seed + index
    train_ds = make_pair_dataset(splits.train, source_table, target_table, pre, batch_size=run.global_batch,
                                 shuffle=True, seed=seed)
    validation_ds = (make_pair_dataset(splits.validation, source_table, target_table, pre,
                                       batch_size=run.global_batch) if splits.validation else None)
    built: dict[int, Seq2SeqParts] = {}

    def build() -> keras.Model:
        parts = build_seq2seq(model_config)
        built[id(parts.model)] = parts
        return parts.model

    decoding = ([ValidationDecoding(lambda m: translator(built[id(m)]), splits.references("validation"),
                                    pre.target_tokens, bleu_sample=config.evaluation.bleu_sample,
                                    sentences=pre.sentences)]
                if splits.validation else [])
    work_dir = run.work_dir / subdir if subdir else run.work_dir
    epoch_weights = EpochWeights(work_dir / "epoch_weights", write=run.chief)
    averaging = model_config.average_epochs > 1 and bool(splits.validation)
    training = dataclasses.replace(config.training, seed=seed)
    model, history = run.train(build, subdir=subdir, config=training, loss="sparse_categorical_crossentropy",
                               metrics=[], train_data=train_ds, validation_data=validation_ds,
                               metric_callbacks=decoding, extra_callbacks=[epoch_weights] if averaging else [])
    averaged = None
    if averaging:
        averaged = _average_epochs(model, kept_epoch(history, training), epoch_weights, model_config.average_epochs,
                                   translator(built[id(model)]), splits.references("validation"), pre.target_tokens)
    return TrainedMember(built[id(model)], history, seed, averaged)


def _choose_members(trained: list[TrainedMember], translator: Callable[[list[Seq2SeqParts]], Translator],
                    references: dict[str, list[str]], kind: str) -> tuple[list[TrainedMember], dict]:
    """The ensemble of the k best members (ranked alone by validation WER, greedy) whose joint greedy
    decoding of the validation split has the lowest WER, k = 1..N (the smaller k on a tie)."""
    if not references:
        log.info("No validation split: the ensemble keeps all %d members", len(trained))
        return trained, {"members": [{"seed": m.seed} for m in trained], "kept_members": len(trained)}

    def validation_wer(members: list[TrainedMember]) -> float:
        return decode_and_score(translator([m.parts for m in members]), references, kind)["word_error_rate"]

    alone = [validation_wer([m]) for m in trained]
    ranked = [trained[i] for i in sorted(range(len(trained)), key=lambda i: alone[i])]
    together = {1: min(alone)}
    for k in range(2, len(ranked) + 1):
        together[k] = validation_wer(ranked[:k])
    kept = min(together, key=lambda k: (together[k], k))
    log.info("Ensemble: validation WER of the members alone %s; of the k best together %s: keeping %d member(s)",
             ", ".join(f"{100 * r:.2f}%" for r in alone),
             ", ".join(f"k={k} {100 * r:.2f}%" for k, r in together.items()), kept)
    report = {"members": [{"seed": m.seed, "val_word_error_rate": r, "epochs_trained": len(m.history)}
                          for m, r in zip(trained, alone)],
              "val_word_error_rate_by_size": {str(k): r for k, r in together.items()},
              "kept_members": kept, "kept_seeds": [m.seed for m in ranked[:kept]]}
    return ranked[:kept], report


# === Translating with an export ===

def member_file(number: int) -> str:
    """The file of an exported ensemble's member `number` (1-based) beside the SavedModel."""
    return "model.keras" if number == 1 else f"member{number}.keras"


def load_members(export_dir: str | Path) -> list[Seq2SeqParts]:
    """The Keras models of an export (one, or an ensemble's members in their decoding order), as parts."""
    paths = [Path(export_dir) / member_file(1)]
    while (Path(export_dir) / member_file(len(paths) + 1)).is_file():
        paths.append(Path(export_dir) / member_file(len(paths) + 1))
    return [Seq2SeqParts.from_model(keras.saving.load_model(path)) for path in paths]


def translate_texts(model: str | Path, texts: list[str], *, export_dir: str | Path = "saved_models",
                    on_batch: Callable[[int], object] | None = None) -> list[str]:
    """Decode `texts` with an exported sequence-to-sequence model; `on_batch(n)` after each batch of n.

    Raises:
        KpipeError: the export is not a sequence-to-sequence model.
    """
    loaded = open_export(model, task="translate", command="kpipe translate", export_dir=export_dir).loaded
    batches = call_in_batches(lambda batch: loaded.translate(tf.constant(batch))["output"].numpy(), texts,
                              on_batch=on_batch)
    return [o.decode("utf-8") for batch in batches for o in batch]
