"""`clone_initializer`: one fresh initializer per weight.

A Keras 3 random initializer created without a seed draws its seed once, when it is created, so
one instance called for several weights gives them all the same values. Every layer here clones
its initializer for each weight it creates, as keras-hub does, so that no two kernels start
equal (the query, key and value kernels of a layer, or the same kernel in every layer).
"""

import keras


def clone_initializer(initializer):
    """A new initializer of the same kind and settings; an unseeded one draws a new seed.

    Examples:
        >>> import numpy as np
        >>> init = keras.initializers.TruncatedNormal(stddev=0.02)
        >>> bool(np.array_equal(init((2, 2)), init((2, 2))))
        True
        >>> bool(np.array_equal(clone_initializer(init)((2, 2)), init((2, 2))))
        False
    """
    initializer = keras.initializers.get(initializer)
    if not isinstance(initializer, keras.initializers.Initializer):
        return initializer  # a plain function has no state to share
    return initializer.__class__.from_config(initializer.get_config())
