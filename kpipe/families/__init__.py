"""Model families, one folder each: `config.py` (the family's config dataclass, no TensorFlow, so a config
is checked before TensorFlow loads) beside `model.py` (its Keras builder) and whatever else only that family
uses (word2vec/sparse_sgd.py). Each folder's `__init__.py` declares its
`FamilySpec` (`spec.py`: what it is, its builder, what it exports, where it can serve); the task registry
(`kpipe.tasks.registry.TASKS`) lists them by task, and the configuration reference renders that table. Layers that
several families share live in `kpipe.layers`; config pieces they share in `kpipe.layers.settings`; model code several
families run sits beside the folders: `seq2seq_decoding.py` (both translators' greedy and beam decoding),
`char_sampling.py` (both name generators' sampling), `encoder_inputs.py` (the pretrained encoders' inputs and
pooling), `lm_step_network.py`.
"""
