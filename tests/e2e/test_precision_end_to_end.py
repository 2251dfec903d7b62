"""Every task trains, evaluates and exports under mixed_bfloat16 on a CPU (tiny runs on real data)."""

import numpy as np
import pytest

from kpipe.tasks.named_pipelines import load_pipeline

from kpipe.tasks.runner import run_pipeline

pytestmark = pytest.mark.slow

RUNS = {
    "sentiment-bilstm": ["data.limit=600", "model.units=[8]"],
    "electricity-seasonal-ar": ["preprocessing.window=96", "preprocessing.horizon=12", "preprocessing.season_length=48",
                         "model.linear_steps=96", "model.units=[8]", "evaluation.baseline=false"],  # MSTL, ETS: ~15 s
    "names-char": ["data.limit=2000", "model.units=[16]"],
    "word2vec-bible": ["data.limit=1000", "preprocessing.min_count=2", "model.embedding_dim=8"],
}


@pytest.mark.parametrize("pipeline", RUNS)
def test_pipeline_runs_in_mixed_bfloat16(pipeline, tmp_path):
    overrides = RUNS[pipeline] + ["training.epochs=1", 'training.precision="mixed_bfloat16"',
                                  f'export.dir="{tmp_path}"']
    result = run_pipeline(load_pipeline(pipeline, overrides))
    assert (result.export_dir / "saved_model.pb").is_file()
    numbers = [v for v in result.metrics.get("history", [{}])[0].values() if isinstance(v, float)]
    assert numbers and np.isfinite(numbers).all()
