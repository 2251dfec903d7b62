"""The keras-io recipe "English-to-Spanish translation with a sequence-to-sequence Transformer" (F. Chollet) on
kpipe's split of the Tatoeba pairs, scored as kpipe scores its translators: the same-run reference for
`translate-eng-spa` and `translate-eng-spa-attention`.

The recipe as published: word-level `TextVectorization` (15,000 words per language, sequences of 20, lower case,
punctuation stripped, "[start]"/"[end]" around the Spanish), token + position embeddings of 256, one transformer
encoder and one decoder (8 heads, feed-forward 2,048), dropout 0.5 before the output, RMSprop, batch 64, greedy
decoding of up to 20 words. Its outputs are lower case without punctuation, so every system is scored twice with
sacreBLEU (multi-reference, every Spanish translation of a test sentence): as is against the references, and
"normalized" (outputs and references lower-cased and stripped of punctuation as the recipe strips them), the only
comparison that is fair to the recipe.

    python benchmarks/translate_vs_keras_io.py --data ../shared/data/translation/spa-eng.tsv.gz --seconds 4878 \\
        --kpipe saved_models/translate-eng-spa/1 --kpipe saved_models/translate-eng-spa-attention/1
"""

from __future__ import annotations

import argparse
import json
import re
import string
import time
from pathlib import Path

import numpy as np

STRIP = string.punctuation.replace("[", "").replace("]", "") + "¿¡"
VOCABULARY, LENGTH, EMBED, HEADS, FEED_FORWARD = 15_000, 20, 256, 8, 2048


def normalize(text: str) -> str:
    """Lower case, the recipe's punctuation stripped, spaces collapsed."""
    return " ".join(re.sub(f"[{re.escape(STRIP)}]", "", text.lower()).split())


def split_pairs(data: str, limit: int):
    from kpipe import load_pipeline
    from kpipe.datasets.pairs import load_pairs

    return load_pairs(load_pipeline("translate-eng-spa", [f'data.path="{data}"', f"data.limit={limit}"]).data)


def build():
    import keras

    class PositionalEmbedding(keras.layers.Layer):
        def __init__(self, length, vocabulary, dim, **kwargs):
            super().__init__(**kwargs)
            self.tokens = keras.layers.Embedding(vocabulary, dim)
            self.positions = keras.layers.Embedding(length, dim)

        def call(self, inputs):
            return self.tokens(inputs) + self.positions(keras.ops.arange(keras.ops.shape(inputs)[-1]))

        def compute_mask(self, inputs, mask=None):
            return keras.ops.not_equal(inputs, 0)

    class Encoder(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.attention = keras.layers.MultiHeadAttention(HEADS, EMBED)
            self.dense = keras.Sequential([keras.layers.Dense(FEED_FORWARD, activation="relu"),
                                           keras.layers.Dense(EMBED)])
            self.norm1, self.norm2 = keras.layers.LayerNormalization(), keras.layers.LayerNormalization()
            self.supports_masking = True

        def call(self, inputs, mask=None):
            padding = None if mask is None else keras.ops.cast(mask[:, None, :], "int32")
            hidden = self.norm1(inputs + self.attention(inputs, inputs, attention_mask=padding))
            return self.norm2(hidden + self.dense(hidden))

    class Decoder(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.self_attention = keras.layers.MultiHeadAttention(HEADS, EMBED)
            self.cross_attention = keras.layers.MultiHeadAttention(HEADS, EMBED)
            self.dense = keras.Sequential([keras.layers.Dense(FEED_FORWARD, activation="relu"),
                                           keras.layers.Dense(EMBED)])
            self.norms = [keras.layers.LayerNormalization() for _ in range(3)]
            self.supports_masking = True

        def call(self, inputs, encoder_outputs, mask=None, encoder_mask=None):
            hidden = self.norms[0](inputs + self.self_attention(inputs, inputs, use_causal_mask=True))
            cross_mask = None if encoder_mask is None else keras.ops.cast(encoder_mask[:, None, :], "int32")
            hidden = self.norms[1](hidden + self.cross_attention(hidden, encoder_outputs, attention_mask=cross_mask))
            return self.norms[2](hidden + self.dense(hidden))

    source = keras.Input((None,), dtype="int64", name="source")
    target_in = keras.Input((None,), dtype="int64", name="target_in")
    source_mask = keras.ops.not_equal(source, 0)
    encoded = Encoder()(PositionalEmbedding(LENGTH, VOCABULARY, EMBED)(source))
    decoded = Decoder()(PositionalEmbedding(LENGTH, VOCABULARY, EMBED)(target_in), encoded,
                        encoder_mask=source_mask)
    outputs = keras.layers.Dense(VOCABULARY, activation="softmax")(keras.layers.Dropout(0.5)(decoded))
    model = keras.Model([source, target_in], outputs)
    model.compile("rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def keras_io_translations(splits, epochs: int, seconds: float) -> tuple[list[str], list[str], float]:
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(1337)

    def spanish_standardize(text):
        return tf.strings.regex_replace(tf.strings.lower(text), f"[{re.escape(STRIP)}]", "")

    source_vectorizer = keras.layers.TextVectorization(VOCABULARY, output_mode="int", output_sequence_length=LENGTH)
    target_vectorizer = keras.layers.TextVectorization(VOCABULARY, output_mode="int",
                                                       output_sequence_length=LENGTH + 1,
                                                       standardize=spanish_standardize)
    english = [s for s, _ in splits.train]
    spanish = [f"[start] {t} [end]" for _, t in splits.train]
    source_vectorizer.adapt(english)
    target_vectorizer.adapt(spanish)

    def dataset(pairs, shuffle):
        ds = tf.data.Dataset.from_tensor_slices(([s for s, _ in pairs], [f"[start] {t} [end]" for _, t in pairs]))
        if shuffle:
            ds = ds.shuffle(len(pairs), seed=1337)

        def vectorized(s, t):
            t = target_vectorizer(t)
            return (source_vectorizer(s), t[:, :-1]), t[:, 1:]

        return ds.batch(64).map(vectorized, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)

    model = build()
    started = time.perf_counter()

    class Budget(keras.callbacks.Callback):  # the same wall-clock time as the kpipe run it is compared with
        def on_train_batch_end(self, batch, logs=None):
            if seconds and time.perf_counter() - started > seconds:
                self.model.stop_training = True

    model.fit(dataset(splits.train, True), validation_data=dataset(splits.validation, False), epochs=epochs,
              verbose=2, callbacks=[Budget()])
    train_seconds = time.perf_counter() - started
    vocabulary = np.array(target_vectorizer.get_vocabulary())
    end = int(np.where(vocabulary == "[end]")[0][0])

    @tf.function
    def step(source_ids, decoded_ids):
        return model([source_ids, decoded_ids], training=False)

    sources = list(splits.references("test"))
    outputs = []
    for start in range(0, len(sources), 256):  # greedy, batched, up to LENGTH words
        source_ids = source_vectorizer(tf.constant(sources[start:start + 256]))
        decoded = np.zeros((len(source_ids), LENGTH), np.int64)
        decoded[:, 0] = int(np.where(vocabulary == "[start]")[0][0])
        done = np.zeros(len(source_ids), bool)
        for i in range(LENGTH - 1):
            token = step(source_ids, tf.constant(decoded)).numpy()[:, i].argmax(-1)
            decoded[:, i + 1] = np.where(done, 0, token)
            done |= token == end
            if done.all():
                break
        for row in decoded:
            words = [vocabulary[t] for t in row[1:] if t not in (0, end)]
            outputs.append(" ".join(w for w in words if w != "[UNK]"))
    return sources, outputs, train_seconds


def scores(outputs: list[str], references: list[list[str]]) -> dict:
    from kpipe.evaluation.sequence_metrics import corpus_bleu, corpus_chrf

    normalized = [[normalize(r) for r in refs] for refs in references]
    return {"bleu": round(corpus_bleu(outputs, references), 2), "chrf": round(corpus_chrf(outputs, references), 2),
            "bleu_normalized": round(corpus_bleu([normalize(o) for o in outputs], normalized), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="../shared/data/translation/spa-eng.tsv.gz")
    parser.add_argument("--epochs", type=int, default=30, help="the recipe trains 30")
    parser.add_argument("--seconds", type=float, default=0,
                        help="stop training after this many seconds (the kpipe run's training time); 0 = no limit")
    parser.add_argument("--limit", type=int, default=0, help="English sentences kept (a quick check); 0 = all")
    parser.add_argument("--kpipe", action="append", default=[], help="kpipe translator exports to score beside it")
    args = parser.parse_args()
    splits = split_pairs(args.data, args.limit)
    references = splits.references("test")
    rows = []
    for export in args.kpipe:
        from kpipe.exports.saved_model import load_saved_model
        from kpipe.tasks.translate.signatures import translate_batches

        loaded = load_saved_model(Path(export))  # WordPiece ops registered first
        sources = list(references)
        started = time.perf_counter()
        outputs, _ = translate_batches(loaded, sources)
        metrics = json.loads((Path(export) / "metrics.json").read_text())
        rows.append({"system": export, **scores(outputs, [references[s] for s in sources]),
                     "decode_s": round(time.perf_counter() - started, 1),
                     "train_s": metrics.get("train_seconds_this_run")})
        print(json.dumps(rows[-1]), flush=True)
    sources, outputs, train_seconds = keras_io_translations(splits, args.epochs, args.seconds)
    rows.append({"system": f"keras-io recipe, {args.epochs} epochs" + (f" or {args.seconds:.0f} s" if args.seconds
                                                                     else ""),
                 **scores(outputs, [references[s] for s in sources]), "train_s": round(train_seconds, 1)})
    print(json.dumps(rows[-1]), flush=True)
    print(f"\n{len(references)} test sentences, every translation a reference (sacreBLEU)\n")
    print("| system | BLEU | chrF | BLEU, lower case without punctuation | training s |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['system']} | {row['bleu']:.2f} | {row['chrf']:.2f} | {row['bleu_normalized']:.2f} | "
              f"{row.get('train_s')} |")


if __name__ == "__main__":
    main()
