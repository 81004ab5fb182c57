"""What every zoo backbone shares: config serialization for `.keras` round trips."""

import keras


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
