"""Tiny pretrained checkpoints for the tests, written here (no test touches the network): a BERT with random
weights in keras-hub's preset format and in Hugging Face's, and the other architectures keras-hub converts."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np


WORDS = ("good great fine lovely superb wonderful bad awful poor terrible boring dreadful the a movie film plot "
         "actor scene it was and flight crew thanks delay").split()


VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"),
              *(c for c in "abcdefghijklmnopqrstuvwxyz" if c not in WORDS)]


def tiny_backbone(seed: int = 0):
    """A 2-layer BERT, hidden size 16, over VOCABULARY, with random weights."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    return keras_hub.models.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
                                         intermediate_dim=32, max_sequence_length=64, dropout=0.0)


def write_keras_hub_preset(folder: Path, seed: int = 0):
    """A keras-hub preset folder (config.json, metadata.json, weights, tokenizer); returns its backbone."""
    import keras_hub

    backbone = tiny_backbone(seed)
    backbone.save_to_preset(str(folder))
    keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(str(folder))
    return backbone


def write_distil_bert_preset(folder: Path, seed: int = 0):
    """A keras-hub DistilBERT preset (no segment ids), hidden size 16, over VOCABULARY; returns its backbone."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.DistilBertBackbone(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2,
                                                   hidden_dim=16, intermediate_dim=32, max_sequence_length=64)
    backbone.save_to_preset(str(folder))
    keras_hub.models.DistilBertTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(str(folder))
    return backbone


def write_electra_preset(folder: Path, seed: int = 0):
    """A keras-hub ELECTRA preset, hidden size 16, over VOCABULARY: a family keras-hub 0.32 has a backbone and a
    tokenizer for but no classifier preprocessor; returns its backbone."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.ElectraBackbone(vocab_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
                                                embedding_dim=16, intermediate_dim=32, max_sequence_length=64)
    backbone.save_to_preset(str(folder))
    keras_hub.models.ElectraTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(str(folder))
    return backbone


def write_deberta_v3_preset(folder: Path, seed: int = 0):
    """A keras-hub DeBERTa-v3 preset (a SentencePiece word model trained here on WORDS; no segment ids),
    hidden size 16; returns its backbone."""
    import keras
    import keras_hub
    import sentencepiece  # keras-hub's own dependency

    proto = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([" ".join(WORDS[i:i + 5]) for i in range(len(WORDS))] * 5), model_writer=proto,
        vocab_size=len(WORDS) + 4, model_type="WORD", pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]",
        bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]", user_defined_symbols="[MASK]", minloglevel=2)
    tokenizer = keras_hub.models.DebertaV3Tokenizer(proto=proto.getvalue())
    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.DebertaV3Backbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=2,
                                                  num_heads=2, hidden_dim=16, intermediate_dim=32,
                                                  max_sequence_length=64, bucket_size=8)
    backbone.save_to_preset(str(folder))
    tokenizer.save_to_preset(str(folder))
    return backbone


def write_roberta_preset(folder: Path, seed: int = 0):
    """A keras-hub RoBERTa preset (byte-pair tokenizer, <s> </s> <pad>), hidden size 16; returns its backbone."""
    import keras
    import keras_hub

    letters = "abcdefghijklmnopqrstuvwxyz"
    tokens = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "\u0120", *letters, *(f"\u0120{c}" for c in letters),
              "go", "od", "\u0120go", "\u0120good"]
    merges = ["g o", "o d", "\u0120 g", "\u0120g o", "\u0120go od"]
    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.RobertaBackbone(vocabulary_size=len(tokens), num_layers=2, num_heads=2,
                                                hidden_dim=16, intermediate_dim=32, max_sequence_length=64)
    backbone.save_to_preset(str(folder))
    keras_hub.models.RobertaTokenizer(vocabulary={t: i for i, t in enumerate(tokens)},
                                      merges=merges).save_to_preset(str(folder))
    return backbone


def write_hugging_face_checkpoint(folder: Path, seed: int = 0):
    """A folder as `transformers` writes a BertModel (config.json, vocab.txt, tokenizer_config.json,
    model.safetensors with its tensor names and (out, in) layouts); returns the backbone it holds."""
    from safetensors.numpy import save_file

    backbone = tiny_backbone(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": len(VOCABULARY), "hidden_size": 16,
        "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64,
        "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12, "pad_token_id": 0}))
    (folder / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True,
                                                              "tokenizer_class": "BertTokenizer"}))

    def value(variable):
        return np.asarray(variable.numpy())

    def dense(variable):  # Keras (in, ...out) kernels -> torch's (out, in)
        kernel = value(variable)
        return kernel.reshape(kernel.shape[0], -1).T

    tensors = {
        "embeddings.word_embeddings.weight": value(backbone.get_layer("token_embedding").embeddings),
        "embeddings.position_embeddings.weight": value(backbone.get_layer("position_embedding").position_embeddings),
        "embeddings.token_type_embeddings.weight": value(backbone.get_layer("segment_embedding").embeddings),
        "embeddings.LayerNorm.weight": value(backbone.get_layer("embeddings_layer_norm").gamma),
        "embeddings.LayerNorm.bias": value(backbone.get_layer("embeddings_layer_norm").beta),
        "pooler.dense.weight": dense(backbone.get_layer("pooled_dense").kernel),
        "pooler.dense.bias": value(backbone.get_layer("pooled_dense").bias),
    }
    for i in range(backbone.num_layers):
        block, prefix = backbone.get_layer(f"transformer_layer_{i}"), f"encoder.layer.{i}."
        attention = block._self_attention_layer
        for name, layer in (("query", attention.query_dense), ("key", attention.key_dense),
                            ("value", attention.value_dense)):
            tensors[f"{prefix}attention.self.{name}.weight"] = dense(layer.kernel)
            tensors[f"{prefix}attention.self.{name}.bias"] = value(layer.bias).reshape(-1)
        output = value(attention.output_dense.kernel)  # (heads, head_dim, hidden)
        tensors[f"{prefix}attention.output.dense.weight"] = output.reshape(-1, output.shape[-1]).T
        tensors[f"{prefix}attention.output.dense.bias"] = value(attention.output_dense.bias)
        for hf_name, layer in (("attention.output.LayerNorm", block._self_attention_layer_norm),
                               ("output.LayerNorm", block._feedforward_layer_norm)):
            tensors[f"{prefix}{hf_name}.weight"] = value(layer.gamma)
            tensors[f"{prefix}{hf_name}.bias"] = value(layer.beta)
        for hf_name, layer in (("intermediate.dense", block._feedforward_intermediate_dense),
                               ("output.dense", block._feedforward_output_dense)):
            tensors[f"{prefix}{hf_name}.weight"] = dense(layer.kernel)
            tensors[f"{prefix}{hf_name}.bias"] = value(layer.bias)
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
              str(folder / "model.safetensors"))
    return backbone
