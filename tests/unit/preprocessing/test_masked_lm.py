"""Masked-LM batches: the targets are the original ids at the masked positions; padding is never masked."""

import numpy as np
import pytest

from kpipe.preprocessing.masked_lm import make_masked_lm_dataset
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.text import encode_texts, fit_vocabulary, make_vectorizer


@pytest.mark.slow  # learns a WordPiece vocabulary
def test_targets_are_the_original_tokens_at_the_masked_positions():
    config = TextPreprocessingConfig(tokenizer="wordpiece", vocabulary_size=120, sequence_length=12)
    texts = np.array(["the crew was great and the seats were comfortable", "lost my bag again", "ok"] * 8)
    vocabulary = fit_vocabulary(texts, config)
    vectorizer = make_vectorizer(config, vocabulary)
    inputs, targets, weights = next(iter(make_masked_lm_dataset(
        texts, vectorizer, config, vocabulary_size=len(vocabulary), mask_rate=0.3, batch_size=24)))
    original = encode_texts(vectorizer, texts, config).numpy()
    positions, targets, weights = inputs["mask_positions"].numpy(), targets.numpy(), weights.numpy()
    assert weights.sum() > 0
    for row in range(len(texts)):
        for position, target, weight in zip(positions[row], targets[row], weights[row]):
            if weight:
                assert original[row, position] == target and target > 4  # a real token, never padding
    masked = inputs["token_ids"].numpy()
    assert (masked[original == 0] == 0).all()  # padding stays padding
