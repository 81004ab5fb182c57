"""Sentence embeddings' retrieval metrics: each anchor ranks every candidate (the positives of
all pairs) by similarity, its own positive the one relevant answer.

`mrr` is the mean reciprocal rank of the right candidate, which with one relevant candidate
per query is scikit-learn's `label_ranking_average_precision_score`; `recall_at_1` and
`recall_at_5` are the share of anchors whose positive is among the top 1 and 5 (scikit-learn's
`top_k_accuracy_score`). A candidate tied with the right one counts as ranked above it, as in
`label_ranking_average_precision_score`: a model that gives every candidate the same score
gets rank n, not 1.
"""

import numpy as np

MAIN_METRIC = "mrr"


def cosine_scores(anchors, candidates):
    """[n_anchors, n_candidates] cosine similarities of two arrays of vectors (float64)."""
    a = np.asarray(anchors, "float64")
    c = np.asarray(candidates, "float64")
    a = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    c = c / np.maximum(np.linalg.norm(c, axis=-1, keepdims=True), 1e-12)
    return a @ c.T


def ranks(scores, targets=None):
    """The 1-based rank of each row's right candidate (`targets`, default the diagonal):
    how many candidates score at least as high as it.

    Examples:
        >>> ranks(np.array([[0.9, 0.1], [0.8, 0.5]])).tolist()
        [1, 2]
    """
    scores = np.asarray(scores, "float64")
    targets = np.arange(len(scores)) if targets is None else np.asarray(targets)
    right = scores[np.arange(len(scores)), targets][:, None]
    return (scores >= right).sum(axis=-1)


def compute(scores, targets=None):
    """`mrr`, `recall_at_1`, `recall_at_5` and `examples` of a score matrix whose row i's
    right candidate is `targets[i]` (default i).

    Examples:
        >>> compute(np.array([[0.9, 0.1], [0.8, 0.5]]))
        {'mrr': 0.75, 'recall_at_1': 0.5, 'recall_at_5': 1.0, 'examples': 2}
    """
    rank = ranks(scores, targets)
    if not len(rank):
        return {"mrr": 0.0, "recall_at_1": 0.0, "recall_at_5": 0.0, "examples": 0}
    return {"mrr": float(np.mean(1.0 / rank)), "recall_at_1": float(np.mean(rank <= 1)),
            "recall_at_5": float(np.mean(rank <= 5)), "examples": int(len(rank))}


__all__ = ["MAIN_METRIC", "compute", "cosine_scores", "ranks"]
