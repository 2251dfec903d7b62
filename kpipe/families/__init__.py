"""Model families, one folder each: `config.py` (the family's config dataclass, no TensorFlow, so a config
is checked before TensorFlow loads) beside `model.py` (its Keras builder) and whatever else only that family
uses (seq2seq_attention/decoding.py, word2vec/sparse_sgd.py). Each folder's `__init__.py` declares its
`FamilySpec` (`spec.py`: what it is, its builder, what it exports, where it can serve); the task registry
(`kpipe.tasks.registry.TASKS`) lists them by task, and the configuration reference renders that table. Layers that
several families share live in `kpipe.layers`; config pieces they share in `kpipe.layers.settings`.
"""
