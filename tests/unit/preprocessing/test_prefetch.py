"""kpipe's input pipelines end in `prefetched`: prefetch without tf.data's autotuning model thread, whose
iterators made garbage-collector passes wait up to a minute (see kpipe/preprocessing/prefetch.py)."""

from pathlib import Path

import numpy as np
import tensorflow as tf

from kpipe.preprocessing.prefetch import prefetched
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.text import fit_vocabulary, make_text_dataset, make_vectorizer

KPIPE = Path(__file__).resolve().parents[3] / "kpipe"


def test_prefetched_keeps_the_elements_and_turns_autotuning_off():
    dataset = tf.data.Dataset.range(10).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
    out = prefetched(dataset)
    assert [int(x) for x in out] == [2 * i for i in range(10)]
    assert out.options().autotune.enabled is False
    assert dataset.options().autotune.enabled is not False  # the input's options are not changed


def test_the_text_pipeline_ends_in_prefetched():
    texts, config = np.array(["a b c", "b c", "c d e f"]), TextPreprocessingConfig()
    dataset = make_text_dataset(texts, np.array([0, 1, 0]), make_vectorizer(config, fit_vocabulary(texts, config)),
                                config, batch_size=2, shuffle=True)
    assert dataset.options().autotune.enabled is False
    assert sum(int(tf.shape(y)[0]) for _, y in dataset) == 3


def test_every_input_pipeline_prefetches_through_prefetched():
    raw = sorted(str(path.relative_to(KPIPE.parent)) for path in KPIPE.rglob("*.py")
                 if path.name != "prefetch.py" and ".prefetch(" in path.read_text(encoding="utf-8"))
    assert raw == []
