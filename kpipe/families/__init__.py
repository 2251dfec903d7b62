"""Model families, one folder each: `config.py` (the family's config dataclass, no TensorFlow, so a config
is checked before TensorFlow loads) beside `model.py` (its Keras builder) and whatever else only that family
uses (seq2seq_attention/decoding.py, word2vec/sparse_sgd.py). Layers that several families share live in
`kpipe.layers`; config pieces they share in `kpipe.layers.settings`. Which task runs which family:
`kpipe.tasks.registry.TASKS`.

    rnn_classifier          embedding (or GloVe) -> (Bi)LSTM/GRU stack -> pooling -> head; siamese for pairs
    transformer_classifier  token + position embedding -> transformer encoder -> pooling -> head
    bag_of_ngrams           word / character n-gram features (TF-IDF, binary, NB) -> linear head
    pretrained_classifier   a keras-hub / Hugging Face encoder fine-tuned with a head
    ensemble                an n-gram member + sequence member(s), weighed on validation (config only:
                            its members are the families above)
    sentence_encoder        a pretrained encoder's pooled vectors (the embed task)
    rnn_forecaster          windows -> linear autoregression + recurrent correction (+ seasonal baseline)
    char_rnn                character LSTM/GRU name generator, optionally conditioned on a category
    char_transformer        character transformer name generator
    seq2seq_attention       GRU/LSTM encoder-decoder with Bahdanau attention; greedy and beam decoding
    seq2seq_transformer     transformer encoder-decoder (keras-hub layers), decoded as seq2seq_attention
    word2vec                skip-gram and CBOW with negative sampling (Keras, or sparse SGD)
"""
