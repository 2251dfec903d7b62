"""Pretrained encoders: keras-hub presets and Hugging Face checkpoints, loaded through keras-hub's
`from_preset`, fine-tuned as text classifiers, and exported with their own tokenizer inside.

    presets.py     resolve and load a preset (a keras-hub name, hf://, kaggle://, or a local folder)
    inputs.py      raw strings -> the backbone's inputs, cut to each batch's longest text; tf.data
    (the families that use them: kpipe/families/pretrained_classifier, kpipe/families/sentence_encoder)
"""
