"""What the language-model families' decoders share: the contract the lm task's samplers call (keras-hub's `next`
contract), and `prefill` by steps for the families whose cache is a recurrent state.

A decoder wraps a trained model and offers, all in the graph:
- `vocabulary_size`;
- `empty_cache(token_ids)`: the cache before any token, for a (batch, length) prompt buffer;
- `prefill(token_ids, count, cache)`: the cache after reading the first `count` tokens of every row (a family
  whose cache is indexed by position may read more: the steps overwrite those positions);
- `step(token, cache, index)`: read one (batch, 1) token at position `index` -> the next token's logits (batch,
  vocabulary), the last hidden state (batch, width) and the cache.
"""

from __future__ import annotations

import tensorflow as tf


class StateDecoder:
    """A decoder whose cache is a fixed-size state (an LSTM's, linear attention's running sums): each token costs
    the same however long the text, and the prompt is read one step at a time (exactly what training computed,
    position by position)."""

    def prefill(self, token_ids, count, cache):
        def body(index, cache):
            _, _, cache = self.step(tf.slice(token_ids, [0, index], [-1, 1]), cache, index)
            return index + 1, cache

        _, cache = tf.while_loop(lambda index, cache: index < count, body, (tf.constant(0), cache))
        return cache
