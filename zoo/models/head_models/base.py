"""What every head model shares: `HeadModel`'s config plumbing, BERT's head layers, and the
registration of a renamed class under its old name."""

import keras

from zoo.layers import ClassificationHead, MaskedLMHead


class HeadModel(keras.Model):
    """Config plumbing shared by the head models: the backbone plus `config_keys`."""

    config_keys = ()

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "backbone": keras.saving.serialize_keras_object(self.backbone)}
        config.update({key: getattr(self, key) for key in self.config_keys})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config, backbone=keras.saving.deserialize_keras_object(config["backbone"]))
        return cls(**config)

    def _keep(self, backbone, **attributes):
        """Keep the backbone, the config values and the head's layers as attributes.

        Called after the functional `__init__`, which is when Keras starts tracking them.
        """
        self.backbone = backbone
        for name, value in attributes.items():
            setattr(self, name, value)


def masked_lm_head(backbone, kernel_initializer):
    """BERT's masked-LM head on `backbone`, its decoder tied to the token embedding."""
    return MaskedLMHead(
        backbone.vocabulary_size, activation=backbone.activation,
        layer_norm_epsilon=backbone.layer_norm_epsilon,
        token_embedding=backbone.token_embedding, kernel_initializer=kernel_initializer,
        dtype=backbone.dtype_policy, name="mlm_head")


def bert_classifier(backbone, units, dropout):
    """A dense `classifier` with dropout before it, initialised as BERT initialises heads.

    TruncatedNormal(0.02) is `initializer_range` in the released `modeling.py`.
    """
    return ClassificationHead(
        units, dropout=dropout,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
        dtype=backbone.dtype_policy, name="classifier")


def register_old_name(cls, old_name):
    """Register `cls` under its former name in Keras' serialization registry; returns `cls`.

    A .keras file saved before the rename names the class by its registered name
    ("zoo>OLD_NAME"), which then loads as `cls`; the returned class is the deprecated Python
    alias. Keras saves `cls` under its own name, the new one.
    """
    keras.saving.get_custom_objects()[f"zoo>{old_name}"] = cls
    return cls
