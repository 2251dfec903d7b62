"""Answer questions from a passage: questions split by article -> the encoder's windows over each context (word
pieces with their offsets) -> a pretrained encoder fine-tuned to point at the answer's start and end -> exact match
and F1 as the official SQuAD script computes them, beside the sliding-window baseline -> a SavedModel that answers
raw strings."""

from __future__ import annotations

import logging
import time

import keras
import numpy as np
import tensorflow as tf

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.questions import Question, QuestionSplits, load_questions
from kpipe.evaluation.squad import SlidingWindowBaseline, best_no_answer_threshold, question_scores, squad_scores
from kpipe.families.pretrained_reader.model import SpanLoss
from kpipe.preprocessing.answer_windows import AnswerWindows
from kpipe.preprocessing.configs import AnswerPreprocessingConfig
from kpipe.preprocessing.prefetch import prefetched
from kpipe.pretrained import presets
from kpipe.pretrained.inputs import trim_to_longest, wordpiece_settings
from kpipe.tasks.answer.predict import BATCH, answers_of
from kpipe.tasks.answer.signatures import AnswerServing, write_reader_export
from kpipe.tasks.registry import family_spec
from kpipe.training.precision import in_float32
from kpipe.training.run import Run

log = logging.getLogger(__name__)

WINDOW_BATCH = 256   # questions whose windows are cut per call when the training windows are made


def run_answer(config: PipelineConfig) -> RunResult:
    """Fine-tune a reader, score it and the sliding-window baseline on the test split, and export it."""
    with Run(config) as run:
        return _run_answer(run, config)


def _run_answer(run: Run, config: PipelineConfig) -> RunResult:
    pre: AnswerPreprocessingConfig = config.preprocessing
    tokenizer = presets.load_word_piece_tokenizer(config.model.preset, pre.sequence_length)  # first: a missing preset fails fast
    splits = load_questions(config.data)
    windows = AnswerWindows(tokenizer, sequence_length=pre.sequence_length, stride=pre.stride,
                            max_question_tokens=pre.max_question_tokens)
    model, history, counts, scoring = train(run, config, splits, windows)
    # the graph the validation answers were traced in, when it reads this model: tracing it costs seconds
    serving = scoring.serving if scoring and scoring.serving and scoring.model is model else AnswerServing(
        model, windows, max_answer_tokens=pre.max_answer_tokens, unanswerable=splits.unanswerable)
    threshold = choose_no_answer_threshold(serving, splits.validation) if splits.unanswerable else None
    started = time.perf_counter()
    predicted = answer_questions(serving, splits.test)
    seconds = time.perf_counter() - started
    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), **splits.sizes(), "windows": counts},
        "pretrained": presets.describe(config.model.preset),
        "test": squad_scores(splits.test, {q.id: p["answer"] for q, p in zip(splits.test, predicted)}),
        "test_questions_per_second": round(len(splits.test) / max(seconds, 1e-9), 2),
    }
    if threshold:
        metrics["no_answer_threshold"] = threshold
    if config.evaluation.baseline:
        baseline = SlidingWindowBaseline().fit(splits.train)
        metrics["baseline"] = {"model": "sliding window (Rajpurkar et al. 2016; Richardson et al. 2013)",
                               "span_words": baseline.span_words, "window": baseline.window,
                               "test": squad_scores(splits.test, baseline.predict(splits.test))}
        metrics["model_minus_baseline_f1"] = metrics["test"]["f1"] - metrics["baseline"]["test"]["f1"]
    log.info("%s", summary_table(metrics))
    answers = [{"id": q.id, "question": q.question, "gold": [text for text, _ in q.answers], **p,
                **question_scores(q, p["answer"])} for q, p in zip(splits.test, predicted)]
    version_dir = run.publish(lambda path: write_reader_export(
        path, model=model, serving=serving, config=config, metrics=metrics, history=history, work_dir=run.work_dir,
        answers=answers, vocabulary=list(tokenizer.get_vocabulary()), wordpiece=wordpiece_settings(
            tokenizer, {"sequence_length": pre.sequence_length, "start_value": [tokenizer.cls_token_id],
                        "end_value": [tokenizer.sep_token_id], "pad_value": tokenizer.pad_token_id}, "post")),
        data=[(q.question, q.context) for q in splits.train])
    return RunResult(version_dir, metrics, summary_text(metrics, splits, version_dir))


# === Training windows ===

def window_features(windows: AnswerWindows, questions: list[Question]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every window of every question, right-padded to the sequence length, and its (start, end) positions: the
    first answer's pieces where the window holds them all, else (0, 0), [CLS] ("no answer here")."""
    length = windows.sequence_length
    columns: dict[str, list] = {"token_ids": [], "segment_ids": [], "padding_mask": []}
    targets = []
    for begin in range(0, len(questions), WINDOW_BATCH):
        chunk = questions[begin:begin + WINDOW_BATCH]
        out = {k: v.numpy() for k, v in windows(tf.constant([q.question for q in chunk]),
                                                tf.constant([q.context for q in chunk])).items()}
        pad = length - out["token_ids"].shape[1]
        for name in columns:
            columns[name].append(np.pad(out[name], [(0, 0), (0, pad)]))
        pieces = [answer_pieces(q, out["starts"][i], out["ends"][i]) for i, q in enumerate(chunk)]
        for n, e in enumerate(out["example"]):
            targets.append(window_target(out["context_index"][n], pieces[e]))
    features = {name: np.concatenate(parts or [np.zeros((0, length))]).astype(np.int32)
                for name, parts in columns.items()}
    return features, np.asarray(targets, np.int32).reshape(-1, 2)


def answer_pieces(question: Question, starts: np.ndarray, ends: np.ndarray) -> tuple[int, int] | None:
    """The first and last context pieces of the question's first answer, or None (no answer, or no piece)."""
    if not question.answers:
        return None
    text, start = question.answers[0]
    first_byte = len(question.context[:start].encode("utf-8"))
    last_byte = first_byte + len(text.encode("utf-8"))
    inside = np.flatnonzero((ends > first_byte) & (starts < last_byte) & (starts >= 0))
    return (int(inside[0]), int(inside[-1])) if len(inside) else None


def window_target(context_index: np.ndarray, pieces: tuple[int, int] | None) -> tuple[int, int]:
    if pieces is None:
        return 0, 0
    first, last = (np.flatnonzero(context_index == piece) for piece in pieces)
    return (int(first[0]), int(last[0])) if len(first) and len(last) else (0, 0)


def reader_dataset(features: dict[str, np.ndarray], targets: np.ndarray, names: list[str], batch_size: int, *,
                   shuffle: bool, seed: int) -> tf.data.Dataset:
    data = tf.data.Dataset.from_tensor_slices(({name: features[name] for name in names}, targets))
    if shuffle:
        data = data.shuffle(len(targets), seed=seed, reshuffle_each_iteration=True)
    return prefetched(data.batch(batch_size).map(lambda x, y: (trim_to_longest(x), y)))


def choose_no_answer_threshold(serving: AnswerServing, questions: list[Question]) -> dict | None:
    """For a model trained with unanswerable questions: the no-answer threshold with the best validation F1, set
    in `serving` (and so in the export); None without a validation split (the threshold stays 0)."""
    if not questions:
        return None
    spans, span_scores, no_answer_scores = [], [], []
    for begin in range(0, len(questions), BATCH):
        batch = questions[begin:begin + BATCH]
        out = serving.n_best(tf.constant([q.question for q in batch]), tf.constant([q.context for q in batch]),
                             tf.constant(1))
        spans += [text.decode("utf-8") for text in out["answers"].numpy()[:, 0]]
        span_scores += out["scores"].numpy()[:, 0].tolist()
        no_answer_scores += out["no_answer_score"].numpy().tolist()
    chosen = best_no_answer_threshold(questions, spans, span_scores, no_answer_scores)
    serving.no_answer_threshold.assign(chosen["threshold"])
    log.info("No-answer threshold %.3f chosen on validation: F1 %.2f (%.2f at 0)", chosen["threshold"], chosen["f1"],
             chosen["f1_at_zero"])
    return chosen


def train(run: Run, config: PipelineConfig, splits: QuestionSplits, windows: AnswerWindows):
    model_config = config.model
    features = {split: window_features(windows, getattr(splits, split)) for split in ("train", "validation")}
    counts = {split: int(len(targets)) for split, (_, targets) in features.items()}
    with_answer = int(np.sum(features["train"][1][:, 0] > 0))
    log.info("Training on %d windows of %d questions (%d hold their answer), validating on %d windows",
             counts["train"], len(splits.train), with_answer, counts["validation"])

    def build() -> keras.Model:  # under the run's strategy, so the backbone is loaded inside build
        return family_spec("answer", model_config.family).build(model_config, presets.load_backbone(model_config.preset))

    taken = presets.backbone_input_names(model_config.preset)
    names = [name for name in ("token_ids", "segment_ids", "padding_mask") if name in taken]
    seed, batch = config.training.seed, run.global_batch
    scoring = ValidationAnswers(windows, config.preprocessing, splits) if splits.validation else None
    model, history = run.train(build, loss=SpanLoss(), metrics=[],
                               train_data=reader_dataset(*features["train"], names, batch, shuffle=True, seed=seed),
                               validation_data=reader_dataset(*features["validation"], names, batch, shuffle=False,
                                                              seed=seed) if splits.validation else None,
                               metric_callbacks=[scoring] if scoring else [])
    # evaluated and exported in float32: the portable exports (float32) then answer as the SavedModel does
    return in_float32(model, build), history, {**counts, "train_with_answer": with_answer}, scoring


class ValidationAnswers(keras.callbacks.Callback):
    """After every epoch, answers the validation questions as the export will (`AnswerServing` on the live weights)
    and adds `val_f1` and `val_exact_match` (official SQuAD scores, percent) to the epoch's logs."""

    def __init__(self, windows: AnswerWindows, pre: AnswerPreprocessingConfig, splits: QuestionSplits):
        super().__init__()
        self.windows, self.pre, self.splits = windows, pre, splits
        self.serving = None

    def on_epoch_end(self, epoch, logs=None):
        if self.serving is None:
            self.serving = AnswerServing(self.model, self.windows, max_answer_tokens=self.pre.max_answer_tokens,
                                         unanswerable=self.splits.unanswerable)
        questions = self.splits.validation
        predicted = answer_questions(self.serving, questions)
        scores = squad_scores(questions, {q.id: p["answer"] for q, p in zip(questions, predicted)})
        logs["val_f1"], logs["val_exact_match"] = scores["f1"], scores["exact_match"]


def answer_questions(serving: AnswerServing, questions: list[Question]) -> list[dict]:
    """The export's own `serving_default` on each question: {"answer", "start", "end", "score"}."""
    return answers_of(lambda q, c: {k: v.numpy() for k, v in serving.serve(q, c).items()},
                      [q.question for q in questions], [q.context for q in questions], None, tf.constant)


def summary_table(metrics: dict) -> str:
    rows = [("model", metrics["test"])]
    if "baseline" in metrics:
        rows.append(("sliding-window baseline", metrics["baseline"]["test"]))
    width = max(len(name) for name, _ in rows)
    lines = [f"{'test split':<{width}}  exact match     F1"]
    lines += [f"{name:<{width}}  {s['exact_match']:>11.2f}  {s['f1']:>5.2f}" for name, s in rows]
    return "\n".join(lines)


def summary_text(metrics: dict, splits: QuestionSplits, version_dir) -> str:
    example = splits.test[0]
    return "\n".join([f"Test on {len(splits.test)} questions ({metrics['data']['articles']['test']} articles):",
                      summary_table(metrics), f"Exported to {version_dir}",
                      f'Try: kpipe answer {version_dir} --question "{example.question}" --context-file passage.txt'])
