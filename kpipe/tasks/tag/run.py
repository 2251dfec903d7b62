"""Tag every word: tagged sentences -> word, character and casing tables -> a tagger -> entity-level scores beside
the most-frequent-tag and feature-CRF baselines -> a SavedModel that tags raw text."""

from __future__ import annotations

import dataclasses
import logging

import keras

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.tagged import TaggedSplits, load_tagged
from kpipe.evaluation.tagging import baseline_metrics, comparison_table, tagging_metrics
from kpipe.families.pretrained_tagger.config import PretrainedTaggerConfig
from kpipe.families.rnn_tagger.config import RNNTaggerConfig
from kpipe.layers.crf import CRFLoss
from kpipe.preprocessing.configs import TaggingPreprocessingConfig
from kpipe.preprocessing.tagging import TaggerInputs, fit_tables, make_tagging_dataset, pad_words
from kpipe.preprocessing.word_windows import WordPieceWindows
from kpipe.pretrained import presets
from kpipe.tasks.registry import family_spec
from kpipe.tasks.tag.signatures import TaggerServing, write_tagger_export
from kpipe.training.run import Run
from kpipe.vectors.alignment import align_to_vocabulary
from kpipe.vectors.word_vectors import load_word_vectors

log = logging.getLogger(__name__)

PREDICT_BATCH = 256  # sentences per call when the test split is tagged


def run_tag(config: PipelineConfig) -> RunResult:
    """Train a tagger, score its entities against both baselines on the test split, and export it."""
    with Run(config) as run:
        return _run_tag(run, config)


def _run_tag(run: Run, config: PipelineConfig) -> RunResult:
    pre: TaggingPreprocessingConfig = config.preprocessing
    if isinstance(config.model, PretrainedTaggerConfig):  # the preset first: a missing one fails in seconds
        tokenizer = presets.load_word_piece_tokenizer(config.model.preset, pre.sequence_length)
        splits = load_tagged(config.data)
        inputs = WordPieceWindows(tokenizer, sequence_length=pre.sequence_length, stride=pre.stride,
                                  casing=config.model.casing)
        model_config, words, vectors = dataclasses.replace(config.model, num_tags=len(splits.tags)), [], None
        tables = None
    else:
        splits = load_tagged(config.data)
        vectors = (load_word_vectors(config.model.pretrained_embeddings, expected_dim=config.model.embedding_dim)
                   if config.model.pretrained_embeddings else None)  # loaded first, so a bad file fails in seconds
        words, chars = fit_tables(splits.train, pre, extra_words=vectors.words if vectors else ())
        inputs = TaggerInputs(words, chars, pre)
        tables = {"words": words, "chars": chars}  # the id tables, for the portable export's NumPy lookup
        model_config = dataclasses.replace(config.model, vocabulary_size=inputs.vocabulary_size,
                                           char_vocabulary_size=inputs.char_vocabulary_size, num_tags=len(splits.tags))
    model, history, coverage = train(run, model_config, splits, inputs, words, vectors)
    serving = TaggerServing(model, inputs, splits.tags)
    predicted = tag_sentences(serving, [w for w, _ in splits.test])
    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), **splits.sizes(), "tags": splits.tags,
                 "scheme": splits.scheme, "orphan_i_tags": splits.orphan_i_tags},
        **tagging_metrics([t for _, t in splits.test], predicted),
    }
    if isinstance(inputs, TaggerInputs):
        metrics.update({"vocabulary_size": inputs.vocabulary_size, "embedding_coverage": coverage})
    else:
        metrics["pretrained"] = presets.describe(config.model.preset)
    if config.evaluation.baseline:
        metrics["baseline"] = baseline_metrics(splits.train, splits.test)
    log.info("Test on %d sentences:\n%s", len(splits.test), comparison_table(metrics))
    version_dir = run.publish(lambda path: write_tagger_export(
        path, model=model, serving=serving, config=config, metrics=metrics, history=history, work_dir=run.work_dir,
        tags=splits.tags, scheme=splits.scheme, tables=tables), data=splits.train)
    return RunResult(version_dir, metrics, summary_text(metrics, splits, version_dir))


def train(run: Run, model_config: RNNTaggerConfig | PretrainedTaggerConfig, splits: TaggedSplits,
          inputs: TaggerInputs | WordPieceWindows, words: list[str], vectors):
    tag_ids = {tag: i for i, tag in enumerate(splits.tags)}
    unknown = {t for _, tags in splits.validation + splits.test for t in tags} - set(tag_ids)
    if unknown:
        log.warning("Tags of the held-out splits that the training split lacks (read as O): %s", sorted(unknown))
        tag_ids = {**{t: 0 for t in unknown}, **tag_ids}
    batch = run.global_batch
    datasets = {split: make_tagging_dataset(getattr(splits, split), tag_ids, inputs, batch_size=batch,
                                            shuffle=split == "train", seed=run.config.training.seed)
                for split in ("train", "validation")}
    pretrained, coverage = None, None
    if vectors is not None:
        pretrained, found = align_to_vocabulary(vectors, ["", "[UNK]", *words],  # ids 0, 1, then the table's
                                                seed=run.config.training.seed)
        coverage = found.as_dict()
    crf_loss = CRFLoss()

    def build():
        if isinstance(model_config, PretrainedTaggerConfig):  # under the run's strategy: the backbone loads here
            model = family_spec("tag", model_config.family).build(model_config,
                                                                   presets.load_backbone(model_config.preset))
        else:
            model = family_spec("tag", model_config.family).build(model_config)
        if pretrained is not None:  # assigned, not an initializer: kept out of the model's config
            model.get_layer("embedding").embeddings.assign(pretrained)
        if model_config.output == "crf":
            crf_loss.crf = model.get_layer("crf")
        return model

    loss = crf_loss if model_config.output == "crf" else keras.losses.SparseCategoricalCrossentropy(ignore_class=-1)
    scoring = [ValidationEntities(inputs, splits.tags, splits.validation)] if splits.validation else []
    model, history = run.train(build, loss=loss, metrics=[], train_data=datasets["train"],
                               validation_data=datasets["validation"] if splits.validation else None,
                               metric_callbacks=scoring)
    return model, history, coverage


class ValidationEntities(keras.callbacks.Callback):
    """After every epoch, tags the validation split as the export will (`TaggerServing.tag_tokens` on the live
    weights) and adds `val_entity_f1` to the epoch's logs: in the history beside the loss, and what early stopping
    can watch (`training.early_stopping_monitor = "val_entity_f1"`)."""

    def __init__(self, inputs: TaggerInputs, tags: list[str], validation: list):
        super().__init__()
        self.inputs, self.tags, self.validation = inputs, tags, validation
        self.serving = None

    def on_epoch_end(self, epoch, logs=None):
        if self.serving is None:
            self.serving = TaggerServing(self.model, self.inputs, self.tags)
        predicted = tag_sentences(self.serving, [words for words, _ in self.validation])
        logs["val_entity_f1"] = tagging_metrics([tags for _, tags in self.validation], predicted)["entity_f1"]


def tag_sentences(serving: TaggerServing, sentences: list[list[str]]) -> list[list[str]]:
    """The export's own `tag_tokens` on `sentences` (what the report scores is what the export answers)."""
    tags = []
    for start in range(0, len(sentences), PREDICT_BATCH):
        chunk = sentences[start:start + PREDICT_BATCH]
        out = serving.tag_tokens(pad_words(chunk))["tags"].numpy()
        tags += [[t.decode() for t in row[:len(words)]] for row, words in zip(out, chunk)]
    return tags


def summary_text(metrics: dict, splits: TaggedSplits, version_dir) -> str:
    lines = [f"Test on {len(splits.test)} sentences:", comparison_table(metrics), f"Exported to {version_dir}",
             f'Try: kpipe tag {version_dir} "Barack Obama visited Paris last week"']
    return "\n".join(lines)
