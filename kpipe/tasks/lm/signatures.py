"""The language-model export's signatures, all on raw strings, all in one graph:

- `serving_default`: prompt -> text (its greedy continuation, `DEFAULT_NEW_TOKENS` tokens at most);
- `generate`: prompt, max_new_tokens, temperature, top_k, top_p, seed -> text (temperature 0 = greedy);
- `beam_search`: prompt, max_new_tokens -> text (the likeliest of `BEAM_WIDTH` beams);
- `score`: text -> log_likelihood (total, nats), words, characters, tokens: perplexity on any text.

Generation runs keras-hub's samplers over the model family's decoder (`kpipe.families.lm_decoding`: `gpt`'s key/value
caches, a recurrent state), one position per step, as keras-hub's own `generate_step` does; the tokenizer is keras-hub's `BytePairTokenizer` with the learnt BPE.
"""

from __future__ import annotations

import copy
from pathlib import Path

import keras
import keras_hub
import tensorflow as tf

from kpipe.evaluation import reporting
from kpipe.portable.export_files import LM_SETTINGS_FILE, TOKENIZER_FILE
from kpipe.exports import manifest, run_files, saved_model
from kpipe.preprocessing.byte_bpe import ByteBPE

DEFAULT_NEW_TOKENS = 64
SCORE_WINDOWS = 32  # windows `score` runs through the model at once (their logits: 32 x context x vocabulary floats)
BEAM_WIDTH = 4  # the `beam_search` signature's beams (keras-hub's BeamSampler takes it when the graph is built)


class LanguageModelServing(tf.Module):
    """The trained model, its tokenizer and its samplers behind the export's four signatures."""

    def __init__(self, model: keras.Model, decoder, bpe: ByteBPE, sequence_length: int, stride: int, *,
                 score_windows: int = SCORE_WINDOWS):
        super().__init__()
        self.model, self.decoder, self.sequence_length, self.stride = model, decoder, sequence_length, stride
        self.score_windows = score_windows
        self.tokenizer = bpe.in_graph()
        self.end_of_text = bpe.end_of_text
        self.greedy = keras_hub.samplers.GreedySampler()
        self.beam = keras_hub.samplers.BeamSampler(num_beams=BEAM_WIDTH)
        self.sampling = keras_hub.samplers.TopPSampler(p=1.0, seed=0)  # p, k, temperature set per call
        self.seed_state = self.sampling.seed_generator.state  # tracked: the export keeps it
        strings = tf.TensorSpec([None], tf.string)
        self.generate = tf.function(self._generate, input_signature=[
            tf.TensorSpec([None], tf.string, name="prompt"), tf.TensorSpec([], tf.int32, name="max_new_tokens"),
            tf.TensorSpec([], tf.float32, name="temperature"), tf.TensorSpec([], tf.int32, name="top_k"),
            tf.TensorSpec([], tf.float32, name="top_p"), tf.TensorSpec([], tf.int32, name="seed")])
        # `serving_default` calls `generate`'s graph (traced once, seconds) with its defaults, not a second trace
        self.serve = tf.function(lambda prompt: self.generate(prompt, tf.constant(-1), tf.constant(0.0),
                                                              tf.constant(0), tf.constant(1.0), tf.constant(-1)),
                                 input_signature=[tf.TensorSpec([None], tf.string, name="prompt")])
        self.beam_search = tf.function(self._beam_search, input_signature=[
            tf.TensorSpec([None], tf.string, name="prompt"), tf.TensorSpec([], tf.int32, name="max_new_tokens")])
        self.score = tf.function(self._score, input_signature=[tf.TensorSpec.from_spec(strings, name="text")])
        # Every signature tokenizes through this one function: keras-hub's BPE graph costs seconds to trace, and a
        # function with a fixed signature is traced once for all of them (and for the SavedModel's own retracing).
        self.tokens_after_start = tf.function(self._with_start, input_signature=[strings])
        self.text_of = tf.function(self.tokenizer.detokenize,
                                   input_signature=[tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)])

    # === Generation ===

    def _generate(self, prompt, max_new_tokens, temperature, top_k, top_p, seed):
        vocabulary = self.decoder.vocabulary_size
        checks = [
            tf.debugging.assert_greater_equal(temperature, 0.0, message="temperature must be >= 0 (0 = greedy)"),
            tf.debugging.assert_greater(top_p, 0.0, message="top_p must be in (0, 1]"),
            tf.debugging.assert_less_equal(top_p, 1.0, message="top_p must be in (0, 1]"),
            tf.debugging.assert_non_negative(top_k, message="top_k must be >= 0 (0 = every token)"),
            tf.debugging.assert_less_equal(top_k, vocabulary, message="top_k is larger than the vocabulary"),
        ]

        def choose(sample):
            def sampled():
                self.seed_state.assign(tf.where(seed >= 0, tf.cast(tf.stack([seed, 0]), self.seed_state.dtype),
                                                self.seed_state))
                sampler = copy.copy(self.sampling)  # the same seed generator; this call's settings
                sampler.p, sampler.temperature = top_p, temperature
                sampler.k = tf.where(top_k > 0, top_k, vocabulary)
                return sample(sampler)

            return tf.cond(temperature > 0, sampled, lambda: sample(self.greedy))

        return self._written(prompt, max_new_tokens, checks, choose)

    def _beam_search(self, prompt, max_new_tokens):
        # One prompt at a time: keras-hub's BeamSampler scores a row's forced prompt tokens as if it had chosen
        # them among its beams, so in a batch of prompts of different lengths a row's result would depend on the
        # shortest prompt beside it.
        return self._written(prompt, max_new_tokens, [], lambda sample: sample(self.beam), one_row_at_a_time=True)

    def _written(self, prompt, max_new_tokens, checks, choose, one_row_at_a_time=False):
        """{"text": each prompt's continuation}: `choose(sample)` runs `sample(sampler)` with the sampler(s) it
        picks, after `checks` and the checks every generation shares (the budget, the context)."""
        checks = checks + [
            tf.debugging.assert_none_equal(max_new_tokens, 0, message="max_new_tokens must be > 0"),
            tf.debugging.assert_greater_equal(max_new_tokens, -1, message="max_new_tokens must be > 0")]
        with tf.control_dependencies(checks):
            ids = self.tokens_after_start(prompt)
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        longest = tf.reduce_max(tf.concat([lengths, [1]], axis=0))  # 1, the start token, for a batch of no prompts
        prompt_fits = tf.debugging.assert_less(longest, self.sequence_length, message=(
            f"the prompt is longer than the model's context of {self.sequence_length} tokens; shorten it"))
        max_new_tokens = tf.where(max_new_tokens < 0,  # serving_default: as many as fit, DEFAULT_NEW_TOKENS at most
                                  tf.minimum(DEFAULT_NEW_TOKENS, self.sequence_length - longest), max_new_tokens)
        total = longest + max_new_tokens
        output_fits = tf.debugging.assert_less_equal(total, self.sequence_length, message=(
            f"the prompt's tokens plus max_new_tokens exceed the model's context of {self.sequence_length} tokens"))
        # Padding must not be the stop token: keras-hub's samplers stop when every row holds one outside its prompt.
        with tf.control_dependencies([prompt_fits, output_fits]):  # the model reads nothing past its positions
            token_ids = padded(ids, total, value=self.end_of_text + 1)

        def written(token_ids, lengths):
            # the samplers start here; rows with longer prompts keep theirs (no prompts: nothing to write)
            first = tf.reduce_min(tf.concat([lengths, [tf.shape(token_ids)[1]]], axis=0))
            width = tf.shape(token_ids)[1]
            cache = self.decoder.prefill(token_ids, first - 1, self.decoder.empty_cache(token_ids))

            def next_token(prompt_ids, cache, index):  # keras-hub's contract: the logits after position index - 1
                return self.decoder.step(tf.slice(prompt_ids, [0, index - 1], [-1, 1]), cache, index - 1)

            def sample(sampler):
                return sampler(next=next_token, prompt=token_ids, cache=cache, index=first,
                               mask=tf.sequence_mask(lengths, width), stop_token_ids=[self.end_of_text])

            return choose(sample)

        if one_row_at_a_time:
            def one_row(row):  # its own buffer: beams scored past its max_new_tokens would choose another best
                ids, length = row
                width = length + max_new_tokens  # reshaped, not indexed with None: a batch of unknown size
                out = written(tf.reshape(ids[:width], [-1, width]), tf.reshape(length, [-1]))[0]
                return tf.pad(out, [[0, total - width]], constant_values=self.end_of_text + 1)

            out = tf.cond(tf.size(lengths) > 0,  # map_fn cannot stack no rows of unknown width
                          lambda: tf.map_fn(one_row, (token_ids, lengths),
                                            fn_output_signature=tf.TensorSpec([None], tf.int32)),
                          lambda: tf.zeros([0, total], tf.int32))
        else:
            out = written(token_ids, lengths)
        return {"text": self._continuations(out, lengths, max_new_tokens)}

    def _with_start(self, texts):
        """Each text's tokens after the end-of-text token that starts every document (ragged)."""
        ids = tf.cast(self.tokenizer(texts), tf.int32)
        start = tf.fill([tf.shape(texts)[0], 1], self.end_of_text)
        return tf.concat([tf.RaggedTensor.from_tensor(start), ids], axis=1)

    def _continuations(self, token_ids, lengths, max_new_tokens):
        """The tokens after each prompt, up to its first end-of-text and at most max_new_tokens, as text."""
        positions = tf.range(tf.shape(token_ids)[1])[None, :]
        after = (positions >= lengths[:, None]) & (positions < lengths[:, None] + max_new_tokens)
        ended = tf.math.cumsum(tf.cast(after & tf.equal(token_ids, self.end_of_text), tf.int32), axis=1) > 0
        keep = after & ~ended
        kept = tf.ragged.boolean_mask(token_ids, keep)
        return self.text_of(kept)

    # === Scoring ===

    def _score(self, text):
        """ln p(text) under the model, its tokens read after the end-of-text token. A text longer than the context
        is read in windows of `sequence_length` tokens starting every `stride` tokens: the first window scores all
        its tokens, each later one only its last `stride`, read after the tokens before them (stride =
        sequence_length: consecutive windows, each starting afresh)."""
        ids = self.tokens_after_start(text)
        inputs, targets = ids[:, :-1], ids[:, 1:]
        lengths = tf.cast(targets.row_lengths(), tf.int32)
        window, stride = self.sequence_length, self.stride
        longest = tf.maximum(tf.reduce_max(lengths), 0)  # an empty batch's maximum is the lowest int32
        count = 1 + (tf.maximum(longest - window, 0) + stride - 1) // stride  # windows per text
        width = window + (count - 1) * stride

        def framed(dense):  # (texts, width) -> (texts * count, window)
            return tf.reshape(tf.signal.frame(dense, window, stride, axis=1), [-1, window])

        dense_inputs, dense_targets = framed(padded(inputs, width)), framed(padded(targets, width))
        present = framed(tf.cast(tf.sequence_mask(lengths, width), tf.int32)) > 0
        new = (tf.range(count)[:, None] == 0) | (tf.range(window)[None, :] >= window - stride)  # (count, window)
        scored = present & tf.reshape(tf.tile(new[None], [tf.shape(text)[0], 1, 1]), [-1, window])
        # Only windows that score a token are run (a short text beside a long one pads to many empty windows), at
        # most `score_windows` at a time: a batch of long texts would otherwise hold all their logits at once (a
        # WikiText article of 25,000 tokens is 200 windows: 16 such texts' logits overflow int32 indexing).
        kept = tf.where(tf.reduce_any(scored, axis=1))[:, 0]
        text_of_window = tf.gather(tf.repeat(tf.range(tf.shape(text)[0]), count), kept)
        chunks = (tf.size(kept) + self.score_windows - 1) // self.score_windows

        def chunk_of(values):  # (kept windows, window) -> (chunks, score_windows, window), padded with masked rows
            values = tf.gather(values, kept)
            padding = chunks * self.score_windows - tf.size(kept)
            return tf.reshape(tf.pad(values, [[0, padding], [0, 0]]), [chunks, self.score_windows, window])

        def window_log_likelihoods(chunk):
            token_ids, targets, mask, scored_here = chunk
            logits = tf.cast(self.model({"token_ids": token_ids, "padding_mask": mask}, training=False), tf.float32)
            token_log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)
            return tf.reduce_sum(tf.where(scored_here, token_log_probs, 0.0), axis=1)

        per_window = tf.map_fn(window_log_likelihoods, (chunk_of(dense_inputs), chunk_of(dense_targets),
                                                        chunk_of(present), chunk_of(scored)),
                               fn_output_signature=tf.TensorSpec([self.score_windows], tf.float32),
                               parallel_iterations=1)
        per_text = tf.math.unsorted_segment_sum(tf.reshape(per_window, [-1])[:tf.size(kept)], text_of_window,
                                                tf.shape(text)[0])
        word_counts = tf.cast(tf.strings.split(text).row_lengths(), tf.int32)
        return {"log_likelihood": per_text, "words": word_counts, "tokens": lengths,
                "characters": tf.strings.length(text, unit="UTF8_CHAR")}


def padded(ragged: tf.RaggedTensor, width, value: int = 0) -> tf.Tensor:
    """`ragged` as a dense (rows, width) tensor, padded on the right with `value` (masked wherever it is read)."""
    dense = ragged.to_tensor(default_value=value)
    return tf.pad(dense, [[0, 0], [0, width - tf.shape(dense)[1]]], constant_values=value)


def write_language_model_export(path: Path, *, model: keras.Model, serving: LanguageModelServing, config,
                                metrics: dict, history: list[dict], work_dir: Path, bpe: ByteBPE) -> None:
    """The SavedModel (`serving_default`, `generate`, `beam_search`, `score`), the run files, and the tokenizer beside them."""
    saved_model.write_saved_model(path, tracked=[model, serving], endpoints={
        "serving_default": serving.serve, "generate": serving.generate, "beam_search": serving.beam_search,
        "score": serving.score})
    run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    bpe.save(path / TOKENIZER_FILE)
    manifest.update(path, warm_up_rows=1)  # the server's warm-up: one row traces all a SavedModel needs
    reporting.write_json({"sequence_length": serving.sequence_length, "stride": serving.stride,
                          "vocabulary_size": bpe.size},
                         path / LM_SETTINGS_FILE)
