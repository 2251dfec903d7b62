import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from kpipe.evaluation import tfidf_baseline
from tests.made_up_data import synthetic_reviews


def split(frame):
    return frame["text"].to_numpy(dtype=object), frame["label"].to_numpy()


def test_matches_the_plain_scikit_learn_script_with_the_c_chosen_on_validation():
    train, validation, test = (split(synthetic_reviews(n, seed=s)) for n, s in ((400, 1), (100, 2), (200, 3)))
    result = tfidf_baseline.fit_and_predict(*train, *validation, test[0])
    # C: the best validation accuracy over the grid, each scored by the script a user would write.
    scores = {}
    for c in tfidf_baseline.C_GRID:
        script = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True,
                                               strip_accents="unicode"), LogisticRegression(C=c, max_iter=2000))
        scores[c] = (script.fit(*train).predict(validation[0]) == validation[1]).mean()
        if c == result.C:
            np.testing.assert_array_equal(result.predicted, script.predict(test[0]))
    assert result.validation_accuracy == scores
    assert scores[result.C] == max(scores.values())
    assert (result.predicted == test[1]).mean() > 0.9  # the synthetic labels are word-driven


def test_without_validation_uses_the_middle_of_the_grid():
    train, test = split(synthetic_reviews(200, seed=1)), split(synthetic_reviews(50, seed=2))
    result = tfidf_baseline.fit_and_predict(*train, np.array([], dtype=object), np.array([]), test[0])
    grid = tfidf_baseline.C_GRID
    assert result.C == grid[len(grid) // 2] and result.validation_accuracy == {}
