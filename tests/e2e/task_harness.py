"""The task harness: one small run per task, trained once per test session, and the checks every task's export
must pass (tests/e2e/test_every_task.py), as tests/unit/families/harness.py does for the families. A task's own
end-to-end file reads the same run (`task_run` in tests/conftest.py) for what only that task does.

A `TaskCase` says how to train the run, which signature to answer with, on what inputs, and a command of another
task that must refuse the export by naming the task's own command (`TaskSpec.command`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from tests.checkpoints import write_hugging_face_checkpoint
from tests.helpers import kpipe_in_process
from tests.made_up_data import SMALL, write_reversal_pairs, write_squad_json

# the quick run of docs/tasks/forecast.md too (tests/e2e/test_docs.py reuses this run for it)
FORECAST_QUICK = ["--set", "preprocessing.window=96", "--set", "preprocessing.horizon=12", "--set",
                  "preprocessing.season_length=48", "--set", "training.epochs=1", "--set", "model.units=[8]",
                  "--set", "model.conv_filters=4", "--set", "model.linear_steps=96", "--set", "data.test_fraction=0.05"]


@dataclasses.dataclass(frozen=True)
class TaskRun:
    folder: Path     # the working directory of the run: its saved_models/ and data files
    export: Path     # the version folder it published
    printed: str     # what `kpipe run` printed


@dataclasses.dataclass(frozen=True)
class TaskCase:
    """One task's small run and the inputs its export is checked on.

    Args:
        task: the registry's task name.
        pipeline: the pipeline the run trains.
        arguments: `kpipe run` arguments after the pipeline (its `--data`, `--set`s).
        signature: the signature the checks call; `inputs` its inputs, by name, in TF Serving's columnar form.
        wrong_command: a kpipe command for another task's exports (`EXPORT` stands for the folder).
        prepare: writes the run's data or checkpoint into its folder first.
        tolerance: absolute tolerance between the SavedModel and the server, and a float portable export.
        shared: the name of a run in tests/conftest.py's SHARED_RUNS that serves as this task's run.
        portable_inputs: the inputs a portable export is checked on, where they must differ from `inputs` (its
            sampler draws with NumPy: greedy there).
    """

    task: str
    pipeline: str
    arguments: tuple[str, ...]
    signature: str
    inputs: dict
    wrong_command: tuple[str, ...]
    prepare: Callable[[Path], None] | None = None
    tolerance: float = 1e-5
    shared: str = ""
    portable_inputs: dict | None = None

    def __repr__(self) -> str:
        return self.task

    def train(self, folder: Path) -> TaskRun:
        if self.prepare:
            self.prepare(folder)
        code, printed = kpipe_in_process("run", self.pipeline, *self.arguments, cwd=folder)
        assert code == 0, printed[-3000:]
        return TaskRun(folder, folder / "saved_models" / self.pipeline / "1", printed)


# the answer task's quick run: the tiny BERT checkpoint (64 positions) over SQuAD JSON of its own words
ANSWER_QUICK = ("--data", "squad.json", "--set", 'model.preset="checkpoint"', "--set", "preprocessing.sequence_length=48",
                "--set", "preprocessing.stride=16", "--set", "preprocessing.max_question_tokens=16", "--set",
                "preprocessing.max_answer_tokens=4", "--set", "training.epochs=1", "--set", "training.batch_size=16")


def write_answer_data(folder: Path) -> None:
    write_hugging_face_checkpoint(folder / "checkpoint", seed=5)
    write_squad_json(folder / "squad.json")


TASK_CASES = [
    TaskCase("answer", "squad-minilm", ANSWER_QUICK, "serving_default",
             {"question": ["which word follows good ?", "which word follows the ?", "who?"],
              "context": ["the movie was good and the plot was awful", "the actor was great", ""]},
             ("tag", "EXPORT", "some text"), prepare=write_answer_data,
             tolerance=0.01),  # scores: the SavedModel computes in bfloat16 (precision "auto"), the portable in float32
    TaskCase("classify", "sentiment-bilstm", (), "serving_default",
             {"text": ["@united thank you, the crew was great", "3 hours on the tarmac again", ""]},
             ("forecast", "EXPORT", "--input", "recent.csv"), shared="sentiment-bilstm"),
    TaskCase("embed", "minilm-embeddings",
             ("--set", 'model.preset="checkpoint"', "--set", "data.limit=300", "--set",
              "preprocessing.sequence_length=64"), "embed", {"text": ["a fine day", "lost my bag again"]},
             ("translate", "EXPORT", "abc"), prepare=lambda folder: write_hugging_face_checkpoint(
                 folder / "checkpoint", seed=3)),
    TaskCase("forecast", "electricity-seasonal-ar", tuple(FORECAST_QUICK), "serve", {},  # inputs: from the data
             ("generate", "EXPORT", "--count", "2")),
    TaskCase("generate", "names-char",
             ("--set", "training.epochs=1", "--set", "data.limit=3000", "--set", "model.units=[32]", "--set",
              'data.categories=["italy", "japan", "germany"]'), "generate",
             {"prefix": "Ma", "count": 3, "temperature": 1.0, "category": "italy", "top_k": 1, "seed": 1},
             ("predict", "EXPORT", "some text")),
    TaskCase("lm", "lm-bible",
             ("--set", "data.limit=3000", "--set", "training.epochs=1", "--set", "preprocessing.vocabulary_size=500",
              "--set", "preprocessing.sequence_length=32", "--set", "model.num_layers=1", "--set", "model.num_heads=2",
              "--set", "model.hidden_dim=32", "--set", "model.intermediate_dim=64"), "generate",
             {"prompt": ["In the beginning", "And Jesus said"], "max_new_tokens": 8, "temperature": 1.0, "top_k": 0,
              "top_p": 0.9, "seed": 3},
             ("tag", "EXPORT", "some text"),
             portable_inputs={"prompt": ["In the beginning", "And Jesus said"], "max_new_tokens": 8,
                              "temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 3}),
    TaskCase("tag", "ner-tweets",
             # enough tweets, epochs and rate that the small model marks entities (its export's entity checks need some:
             # 4 epochs at 0.02 mark the same ones as 8 at 0.01, and the epochs after the first cost 1.6 s each)
             ("--set", "data.limit=1000", "--set", "training.epochs=4", "--set", "training.learning_rate=0.02",
              "--set", 'model.pretrained_embeddings=""',
              "--set", "model.embedding_dim=16", "--set", "model.units=[16]", "--set", "model.char_units=8",
              "--set", "preprocessing.vocabulary_size=3000"), "serving_default",
             {"text": ["Barack Obama visited Paris with @john", "I love New York!", ""]},
             ("translate", "EXPORT", "abc")),
    TaskCase("translate", "g2p-attention",
             ("--data", "pairs.csv", "--set", "training.epochs=6", "--set", "training.learning_rate=0.01",
              "--set", "model.average_epochs=3", *SMALL), "translate", {"text": ["abc", "hgfe", ""]},
             ("embed", "EXPORT", "some text"),
             prepare=lambda folder: write_reversal_pairs(folder / "pairs.csv", 3000, seed=0)),
    TaskCase("word2vec", "word2vec-bible",
             ("--set", "data.limit=3000", "--set", "training.epochs=1", "--set", "preprocessing.min_count=3",
              "--set", "model.embedding_dim=16"), "embed", {"words": ["god", "no-such-word", ""]},
             ("predict", "EXPORT", "some text")),
]
CASES = {case.task: case for case in TASK_CASES}


def forecast_windows() -> list:
    """Two windows of the embedded half-hourly demand, in original units (the forecast case's inputs)."""
    import numpy as np
    from pmdarima.datasets import load_taylor

    series = load_taylor().astype("float32")
    return np.stack([series[-96:], series[-192:-96]]).reshape(2, 96, 1).tolist()


def inputs_of(case: TaskCase) -> dict:
    return {"window": forecast_windows()} if case.task == "forecast" else case.inputs
