"""The serving process of tests.harness.serve_fresh: started once per test process and reused,
it answers each call with SavedModels loaded for that call alone, reports a crash with its
stderr, and is started again for the next call."""

import pytest

from tests import harness


@pytest.fixture(scope="module")
def doubling(tmp_path_factory):
    import tensorflow as tf

    class Doubling(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def serve(self, x):
            return {"y": 2.0 * tf.debugging.check_numerics(x, "not a number")}

    path = str(tmp_path_factory.mktemp("doubling") / "1")
    module = Doubling()
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    return path


def test_the_serving_process_is_reused_and_a_crash_is_reported_then_replaced(
        doubling, tmp_path):
    assert harness.serve_fresh(doubling, [{"x": [1.0, 2.5]}])[0]["y"].tolist() == [2.0, 5.0]
    first = harness._SERVER["proc"]
    assert harness.serve_fresh(doubling, [{"x": [3.0]}])[0]["y"].tolist() == [6.0]
    assert harness._SERVER["proc"] is first  # one TensorFlow start-up for both
    # An op's error in the graph comes back as the request's answer, no crash.
    error, = harness.serve_fresh(doubling, [{"x": [float("nan")]}])
    assert error["error"].startswith("InvalidArgumentError: ") and "not a number" in error["error"]

    missing = "the serving process crashed (?s:.*)" + str(tmp_path / "missing")
    with pytest.raises(AssertionError, match=missing):
        harness.serve_fresh(tmp_path / "missing", [{"x": [1.0]}])
    assert first.poll() is not None
    assert harness.serve_fresh(doubling, [{"x": [4.0]}])[0]["y"].tolist() == [8.0]
    assert harness._SERVER["proc"] is not first
