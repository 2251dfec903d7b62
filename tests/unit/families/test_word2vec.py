import numpy as np

from kpipe.families.word2vec.config import Word2VecConfig
from kpipe.families.word2vec.model import build_skipgram, negative_sampling_loss


def test_scores_are_dot_products_and_the_loss_is_the_sgns_objective():
    model = build_skipgram(Word2VecConfig(vocabulary_size=20, embedding_dim=4, negatives=3))
    rng = np.random.default_rng(0)
    for name in ("word_vectors", "output_vectors"):
        model.get_layer(name).embeddings.assign(rng.normal(size=(20, 4)).astype("float32"))
    targets, contexts = np.array([1, 5], "int32"), np.array([2, 7], "int32")
    negatives = np.array([[3, 4, 9], [11, 12, 13]], "int32")
    scores = model([targets, contexts, negatives]).numpy()
    V = model.get_layer("word_vectors").embeddings.numpy()
    U = model.get_layer("output_vectors").embeddings.numpy()
    expected = np.stack([[V[t] @ U[c] for c in [ctx, *neg]] for t, ctx, neg in zip(targets, contexts, negatives)])
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    labels = np.array([[1, 0, 0, 0]] * 2, "float32")
    sigmoid = 1 / (1 + np.exp(-expected))
    objective = -np.log(sigmoid[:, 0]) - np.log(1 - sigmoid[:, 1:]).sum(axis=1)   # Mikolov et al. (2013), eq. 4
    np.testing.assert_allclose(negative_sampling_loss(labels, scores).numpy(), objective, rtol=1e-4)


def test_cbow_scores_the_mean_of_the_real_context_words():
    from kpipe.families.word2vec.model import build_cbow

    model = build_cbow(Word2VecConfig(vocabulary_size=20, embedding_dim=4, negatives=2, window=2))
    rng = np.random.default_rng(1)
    model.get_layer("output_vectors").embeddings.assign(rng.normal(size=(20, 4)).astype("float32"))
    V = model.get_layer("word_vectors").embeddings.numpy()       # 21 rows: the last is padding
    contexts = np.array([[3, 4, 20, 20], [5, 6, 7, 8]], "int32")   # 20 = no word in that slot
    targets, negatives = np.array([1, 2], "int32"), np.array([[9, 10], [11, 12]], "int32")
    scores = model([contexts, targets, negatives]).numpy()
    U = model.get_layer("output_vectors").embeddings.numpy()
    means = [V[[3, 4]].mean(axis=0), V[[5, 6, 7, 8]].mean(axis=0)]
    expected = np.stack([[means[b] @ U[w] for w in [targets[b], *negatives[b]]] for b in range(2)])
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
