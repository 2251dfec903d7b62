"""Sequence to sequence end to end: pairs -> token ids -> attention encoder-decoder -> scores -> SavedModel.

`_run_translate` reads top to bottom as its stages: load the pairs, fit the token tables, train the member(s),
choose the ensemble on validation, decode and score the test split (every distinct source once, scored against
all its references: word/token error rates, and BLEU/chrF for sentences), publish. The export's `translate`
signature (`signatures.py`) takes a batch of raw strings and returns {"output": decoded strings, "attention":
weights (batch, target_steps, source_steps)}; characters or words the model never saw map to the unknown token,
and inputs longer than `preprocessing.max_source_length` tokens are cut.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable

import keras
import tensorflow as tf

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.pairs import PairSplits, load_pairs
from kpipe.evaluation.sequence_metrics import corpus_bleu, corpus_chrf, error_analysis, error_rates, sentence_bleu
from kpipe.families.seq2seq_attention.config import Seq2SeqConfig
from kpipe.families.seq2seq_attention.model import Seq2SeqParts
from kpipe.preprocessing.configs import PairPreprocessingConfig
from kpipe.preprocessing.token_pairs import TokenTable, fit_tables, lengths, make_pair_dataset
from kpipe.tasks.translate.families import build_translation_model, sized
from kpipe.tasks.translate.signatures import Translator, translate_batches, write_translator_export
from kpipe.tasks.translate.validation import ValidationDecoding, average_epochs, decode_and_score, tokenized
from kpipe.training.checkpoint_averaging import EpochWeights
from kpipe.training.loop import kept_epoch
from kpipe.training.run import Run

log = logging.getLogger(__name__)


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
    source_table, target_table = fit_token_tables(run, splits, pre)
    model_config: Seq2SeqConfig = sized(config.model, source_table.size, target_table.size, pre)

    def make_translator(parts, decoding: Seq2SeqConfig = dataclasses.replace(model_config, beam_width=1)):
        """Validation decodes greedily: fast, and what members are compared on."""
        return Translator(parts, source_table, target_table, pre, decoding)

    trained = train_members(run, config, model_config, splits, source_table, target_table, make_translator)
    members, ensemble = (_choose_members(trained, make_translator, splits.references("validation"), pre.target_tokens)
                         if len(trained) > 1 else (trained, None))
    translator = make_translator([m.parts for m in members], model_config)
    tested = score_test_split(translator, splits, pre, model_config, symbols=symbol_name(config))
    metrics, history = collect_metrics(run, config, splits, model_config, trained, ensemble, tested)
    version_dir = run.publish(lambda path: write_translator_export(
        path, members=[m.parts for m in members], translator=translator, config=config, metrics=metrics,
        history=history, work_dir=run.work_dir, tables=(source_table, target_table),
        examples=(tested.sources, tested.outputs, tested.attention)), data=splits.train)
    return RunResult(version_dir, metrics, summary_text(metrics, tested, version_dir))


# === Stages ===

def fit_token_tables(run: Run, splits: PairSplits, pre: PairPreprocessingConfig) -> tuple[TokenTable, TokenTable]:
    """Source and target vocabularies (characters, words or WordPiece sub-words) fitted on the training split;
    sub-word vocabularies are cached under the export folder."""
    source_table, target_table = fit_tables([s for s, _ in splits.train], [t for _, t in splits.train], pre,
                                            cache_dir=run.export_root / ".cache")
    too_long = int((lengths([s for s, _ in splits.train], source_table, pre.source_tokens, pre.lowercase)
                    > pre.max_source_length).sum())
    log.info("Tokens: %d source, %d target; %d training sources longer than %d tokens are cut",
             len(source_table.tokens), len(target_table.tokens), too_long, pre.max_source_length)
    return source_table, target_table


def train_members(run: Run, config: PipelineConfig, model_config: Seq2SeqConfig, splits: PairSplits,
                  source_table: TokenTable, target_table: TokenTable,
                  make_translator: Callable) -> list["TrainedMember"]:
    """`model.ensemble_members` encoder-decoders, seeds training.seed, training.seed + 1, ..."""
    count = model_config.ensemble_members
    trained = []
    for index in range(count):
        if count > 1:
            log.info("Ensemble member %d of %d (seed %d)", index + 1, count, config.training.seed + index)
        trained.append(_train_member(run, config, model_config, splits, source_table, target_table, make_translator,
                                     index=index, subdir=f"member{index + 1}" if count > 1 else ""))
    return trained


@dataclasses.dataclass(frozen=True)
class TestDecoding:
    """The test split decoded: every distinct source once, its outputs and attention, and their scores."""

    sources: list[str]
    outputs: list[str]
    attention: list
    references: dict[str, list[str]]
    scores: dict
    seconds: float


def symbol_name(config: PipelineConfig) -> str:
    """What a target token is called in the log: a phoneme for the embedded pronunciations."""
    return "phoneme" if config.data.source == "embedded" else "token"


def score_test_split(translator: Translator, splits: PairSplits, pre: PairPreprocessingConfig,
                     model_config: Seq2SeqConfig, symbols: str = "token") -> TestDecoding:
    """Error rates (an output is right if it matches any reference), and BLEU/chrF with every translation of a
    source as a reference when both sides are words or sub-words."""
    references = splits.references("test")
    sources = list(references)
    started = time.perf_counter()
    outputs, attention = translate_batches(translator, sources)
    seconds = time.perf_counter() - started
    hypotheses, reference_tokens = tokenized(outputs, sources, references, pre.target_tokens)
    scores = {**error_rates(hypotheses, reference_tokens),
              "decoding": "greedy" if model_config.beam_width == 1 else f"beam {model_config.beam_width}",
              "error_analysis": error_analysis(sources, hypotheses, reference_tokens)}
    if pre.sentences:  # words or sub-words on both sides: scored as translations are
        scores["bleu"] = corpus_bleu(outputs, [references[s] for s in sources])  # sacreBLEU, 0-100
        scores["chrf"] = corpus_chrf(outputs, [references[s] for s in sources])
        sentence_scores = [sentence_bleu(o, references[s]) for o, s in zip(outputs, sources)]
        worst = sorted(range(len(sources)), key=sentence_scores.__getitem__)[:20]
        scores["worst_translations"] = [{"source": sources[i], "output": outputs[i],
                                         "references": references[sources[i]],
                                         "sentence_bleu": round(sentence_scores[i], 2)} for i in worst]
    log.info("Test: word error rate %.2f%%, %s error rate %.2f%% on %d sources (%s decoding, %.1f s)",
             100 * scores["word_error_rate"], symbols, 100 * scores["token_error_rate"], len(sources),
             scores["decoding"], seconds)
    return TestDecoding(sources, outputs, attention, references, scores, seconds)


def collect_metrics(run: Run, config: PipelineConfig, splits: PairSplits, model_config: Seq2SeqConfig,
                    trained: list["TrainedMember"], ensemble: dict | None,
                    tested: TestDecoding) -> tuple[dict, list[dict]]:
    """The run's metrics.json, and its history (every member's epochs)."""
    count = len(trained)
    history = [{**h, "member": number} if count > 1 else h for number, m in enumerate(trained, 1) for h in m.history]
    averaged = (trained[0].checkpoint_averaging if count == 1
                else [m.checkpoint_averaging for m in trained] if model_config.average_epochs > 1 else None)
    scores = dict(tested.scores)
    worst = scores.pop("worst_translations", None)
    return {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), **splits.sizes(), "test_sources": len(tested.sources)},
        **scores,
        "decode_seconds": round(tested.seconds, 2),
        "checkpoint_averaging": averaged,
        **({"ensemble": ensemble} if ensemble else {}),
        "examples": [{"source": s, "output": o, "references": tested.references[s]} for s, o in
                     list(zip(tested.sources, tested.outputs))[:20]],
        **({"worst_translations": worst} if worst is not None else {}),
    }, history


def summary_text(metrics: dict, tested: TestDecoding, version_dir) -> str:
    sources, outputs = tested.sources, tested.outputs
    examples = ", ".join(f"{s} → {o}" for s, o in list(zip(sources, outputs))[:3])
    scored = (f"Test BLEU {metrics['bleu']:.2f}, chrF {metrics['chrf']:.2f} (sacreBLEU, every translation of a "
              f"source a reference) on {len(sources)} sources" if "bleu" in metrics else
              f"Test word error rate {100 * metrics['word_error_rate']:.2f}%, token error rate "
              f"{100 * metrics['token_error_rate']:.2f}% on {len(sources)} sources")
    return (f"{scored}\nExamples: {examples}\n"
            f"Exported to {version_dir} (report: metrics.json, attention.png)\n"
            f'Try: kpipe translate {version_dir} "{sources[0]}"')


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
        parts = build_translation_model(model_config)
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
        averaged = average_epochs(model, kept_epoch(history, training), epoch_weights, model_config.average_epochs,
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
