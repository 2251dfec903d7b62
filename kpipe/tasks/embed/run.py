"""Sentence embeddings from a pretrained encoder as it is: nothing trains, the export takes raw strings.

preset → keras-hub backbone and its preprocessor → pooling (masked mean or [CLS]) → unit length →
a SavedModel whose `embed` signature maps raw strings to embeddings, tokenizer inside; `kpipe embed`,
`kpipe similar`, `kpipe map --texts` and `kpipe serve` read it.

What the embeddings are worth is measured on the labelled data of the pipeline (a linear probe):
scikit-learn's logistic regression on the frozen embeddings of the training split, its C chosen on
the validation split, scored on the test split beside the TF-IDF + logistic regression baseline fitted
on the same split in the same run.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.text_classification import TextSplits, load_text_classification
from kpipe.evaluation.classification import classification_metrics
from kpipe.exports import run_files, saved_model
from kpipe.families.sentence_encoder.config import SentenceEncoderConfig
from kpipe.families.sentence_encoder.model import build_sentence_encoder
from kpipe.pretrained import inputs as pretrained_inputs
from kpipe.pretrained import presets
from kpipe.tasks.classify.baselines import comparison_table, tfidf_baseline_metrics
from kpipe.tasks.embed.signatures import SentenceEncoderServing, embed_by_length
from kpipe.training.run import Run

log = logging.getLogger(__name__)


# Inverse regularisation strengths the probe tries on validation (unit-length embeddings need a weak one).
PROBE_C_GRID = (0.25, 1.0, 4.0, 16.0, 64.0)


def linear_probe(features: dict[str, np.ndarray], splits: TextSplits) -> dict:
    """Logistic regression on the embeddings: C chosen on validation (ties: the stronger regularisation),
    test predictions scored."""
    from sklearn.linear_model import LogisticRegression

    def fit(c):
        return LogisticRegression(C=c, max_iter=2000).fit(features["train"], splits.train.labels)

    models = {c: fit(c) for c in PROBE_C_GRID}
    scores = {c: float((m.predict(features["validation"]) == splits.validation.labels).mean())
              for c, m in models.items()}
    best = max(PROBE_C_GRID, key=lambda c: (scores[c], -c))
    predicted = models[best].predict(features["test"])
    return {"name": "logistic regression on the embeddings", "C": best,
            "validation_accuracy_by_C": {str(c): a for c, a in scores.items()},
            **classification_metrics(splits.test.labels, predicted, splits.label_names)}


def run_embed(config: PipelineConfig) -> RunResult:
    """Export the pretrained encoder of `config.model` as a sentence encoder, with its linear-probe report."""
    with Run(config) as run:
        return _run_embed(run, config)


def _run_embed(run: Run, config: PipelineConfig) -> RunResult:
    model_config: SentenceEncoderConfig = config.model
    pre = config.preprocessing
    preprocessor = pretrained_inputs.load_run_preprocessor(model_config.preset, pre)
    encoder = build_sentence_encoder(model_config, presets.load_backbone(model_config.preset))
    splits = load_text_classification(config.data)
    started = time.perf_counter()
    features = {name: embed_by_length(encoder, preprocessor, split.texts, config.training.batch_size)
                for name, split in (("train", splits.train), ("validation", splits.validation),
                                    ("test", splits.test))}
    seconds = time.perf_counter() - started
    texts = len(splits.train) + len(splits.validation) + len(splits.test)
    rate = texts / max(seconds, 1e-9)
    log.info("Embedded %d texts in %.1f s (%.0f texts/s)", texts, seconds, rate)
    probe = linear_probe(features, splits)
    metrics = {
        **probe, **run.common_metrics([]),
        "data": {"source": config.data.describe(), "train": len(splits.train),
                 "validation": len(splits.validation), "test": len(splits.test)},
        "pretrained": {**presets.describe(model_config.preset), "pooling": model_config.pooling,
                       "normalize": model_config.normalize, "dimension": int(features["train"].shape[1]),
                       "parameters": int(encoder.count_params())},
        "texts_per_second": round(rate, 1),
    }
    if config.evaluation.baseline:
        metrics["baseline"] = tfidf_baseline_metrics(splits)
    table = comparison_table(metrics).replace("model  ", "probe  ", 1)
    log.info("Linear probe on the embeddings, test on %d examples:\n%s", len(splits.test), table)

    def write(path: Path) -> None:
        serving = SentenceEncoderServing(preprocessor, encoder)
        saved_model.write_saved_model(path, tracked=[preprocessor, encoder, serving],
                                      endpoints={"embed": serving.embed})
        run_files.write_run_files(path, model=encoder, config=config, metrics=metrics, history=[],
                                  work_dir=run.work_dir)

    version_dir = run.publish(write, data=(splits.train.texts.tolist(), splits.train.labels.tolist()))
    summary = (f"Sentence encoder {model_config.preset} ({metrics['pretrained']['dimension']} dimensions, nothing "
               f"trained). Linear probe on its embeddings, test on {len(splits.test)} examples:\n{table}\n"
               f"Exported to {version_dir} (report: metrics.json)\n"
               f'Try: kpipe embed {version_dir} "your text here"   or   kpipe similar {version_dir} --query "..." '
               "--file sentences.txt")
    return RunResult(version_dir, metrics, summary)
