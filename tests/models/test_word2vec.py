import numpy as np

from kpipe.models.word2vec import Word2VecConfig, build_skipgram, negative_sampling_loss


def test_scores_are_dot_products_and_the_loss_is_the_sgns_objective():
    model = build_skipgram(Word2VecConfig(vocabulary_size=20, embedding_dim=4, negatives=3))
    rng = np.random.default_rng(0)
    for name in ("target", "context"):
        model.get_layer(name).embeddings.assign(rng.normal(size=(20, 4)).astype("float32"))
    targets, contexts = np.array([1, 5], "int32"), np.array([2, 7], "int32")
    negatives = np.array([[3, 4, 9], [11, 12, 13]], "int32")
    scores = model([targets, contexts, negatives]).numpy()
    V = model.get_layer("target").embeddings.numpy()
    U = model.get_layer("context").embeddings.numpy()
    expected = np.stack([[V[t] @ U[c] for c in [ctx, *neg]] for t, ctx, neg in zip(targets, contexts, negatives)])
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    labels = np.array([[1, 0, 0, 0]] * 2, "float32")
    sigmoid = 1 / (1 + np.exp(-expected))
    objective = -np.log(sigmoid[:, 0]) - np.log(1 - sigmoid[:, 1:]).sum(axis=1)   # Mikolov et al. (2013), eq. 4
    np.testing.assert_allclose(negative_sampling_loss(labels, scores).numpy(), objective, rtol=1e-4)
