"""What every zoo backbone shares: config serialization for `.keras` round trips, and the
decoder blocks' key/value-cache path that generation runs (`zoo.generation`)."""

import keras
from keras import ops


class Backbone(keras.Model):
    """A functional Keras model whose constructor arguments are listed in `config_keys`.

    `get_config()` returns every one of them (as attributes of the same name), so
    `from_config(get_config())` and `.keras` files rebuild the same architecture.
    """

    config_keys = ()

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }
        config.update({key: getattr(self, key) for key in self.config_keys})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    def _set_config(self, values):
        missing = set(self.config_keys) - set(values)
        if missing:
            raise TypeError(f"{type(self).__name__}: config keys not recorded: {sorted(missing)}")
        for key in self.config_keys:
            setattr(self, key, values[key])

    def _blocks_with_cache(self, x, key_mask, cache, index, write=None):
        """Run `self.blocks` on `seq` new positions with a key/value cache.

        The new positions sit in cache slots [index, index + seq); slot j is visible to the
        query in slot q when `key_mask[:, j]` holds and j <= q (causal). `cache` is a tuple of
        2 * num_layers tensors (keys, values of each block; `zoo.generation.CachedLM`);
        `write` writes the new keys and values (`MultiHeadSelfAttention.call_cached`).
        Returns the (batch, seq, hidden) outputs and the updated cache.
        """
        seq, length = ops.shape(x)[1], ops.shape(key_mask)[1]
        slots = ops.arange(seq) + index
        causal = ops.arange(length)[None, :] <= slots[:, None]  # (seq, length)
        mask = ops.logical_and(ops.cast(key_mask, "bool")[:, None, None, :],
                               causal[None, None])  # (batch, 1, seq, length)
        updated = []
        for i, block in enumerate(self.blocks):
            x, keys, values = block.call_cached(
                x, mask, cache[2 * i], cache[2 * i + 1], index, write)
            updated += [keys, values]
        return x, tuple(updated)

    def _positions(self, positions, dtype):
        """Rows of the learned position table at per-row absolute `positions` (batch, seq)."""
        table = ops.cast(self.position_embedding.embeddings, dtype)
        return ops.take(table, ops.cast(positions, "int32"), axis=0)
