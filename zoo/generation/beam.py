"""Beam search as transformers' `generate(num_beams=...)` runs it (the vectorized search of
transformers 4.50+), one prompt's beams at a time, in NumPy on the host.

Each step keeps the 2 * num_beams best continuations over all beams (more with several stop
tokens), continues the best num_beams that did not stop, and moves a stopped one among the
top num_beams into the finished set, scored sum(log p) / generated_length ** length_penalty.
The search of a prompt ends when no running beam can beat the worst finished one (transformers'
`early_stopping=False` heuristic) or every continuation has stopped.
"""

import numpy as np

from zoo.generation import sampling

_FLOOR = np.float32(-1.0e9)  # transformers' "impossible" score


class BeamSearch:
    """The beams of one prompt.

    Args:
        prompt: the prompt's ids.
        num_beams: beams kept.
        options: `zoo.generation.Options` (length_penalty, stop_token_ids, max_new_tokens and
            the processors).
    """

    def __init__(self, prompt, num_beams, options):
        self.prompt = list(prompt)
        self.num_beams = num_beams
        self.options = options
        self.keep = max(2, 1 + len(options.stop_token_ids)) * num_beams
        self.running = [[] for _ in range(num_beams)]  # generated ids of each running beam
        self.scores = np.full(num_beams, _FLOOR, np.float32)
        self.scores[0] = 0.0  # only the first beam's continuations count at the first step
        self.finished = [[] for _ in range(num_beams)]
        self.finished_scores = np.full(num_beams, _FLOOR, np.float32)
        self.is_finished = np.zeros(num_beams, bool)
        self.improvable = True
        self.done = False

    def step(self, logits, new_tokens):
        """Advance one token from the (num_beams, vocab) logits of the running beams.

        Returns (source beam of each new running beam, its new token), for the cache and the
        next forward pass.
        """
        options, n = self.options, self.num_beams
        sequences = [self.prompt + beam for beam in self.running]
        log_probs = sampling.process(sampling.log_softmax(logits), sequences, new_tokens,
                                     options)
        vocab = log_probs.shape[-1]
        total = (log_probs + self.scores[:, None]).reshape(-1)
        top = np.argsort(-total, kind="stable")[:self.keep]
        top_scores = total[top]
        beams, tokens = top // vocab, top % vocab
        candidates = [self.running[b] + [int(t)] for b, t in zip(beams, tokens)]
        stops = np.array([int(t) in options.stop_token_ids or new_tokens + 1
                          >= options.max_new_tokens for t in tokens])

        running_scores = top_scores + stops.astype(np.float32) * _FLOOR
        chosen = np.argsort(-running_scores, kind="stable")[:n]
        self.running = [candidates[i] for i in chosen]
        self.scores = running_scores[chosen]

        just_finished = stops & (np.arange(self.keep) < n)
        final = top_scores / np.float32((new_tokens + 1) ** options.length_penalty)
        final = final + np.float32(0 if self.improvable else _FLOOR)
        final = final + (~just_finished).astype(np.float32) * _FLOOR
        merged = self.finished + candidates
        merged_scores = np.concatenate([self.finished_scores, final.astype(np.float32)])
        merged_finished = np.concatenate([self.is_finished, just_finished])
        best = np.argsort(-merged_scores, kind="stable")[:n]
        self.finished = [merged[i] for i in best]
        self.finished_scores = merged_scores[best]
        self.is_finished = merged_finished[best]

        length = new_tokens + 1
        best_running = self.scores[0] / np.float32(length ** options.length_penalty)
        worst = np.where(self.is_finished, self.finished_scores.min(), _FLOOR)
        self.improvable = self.improvable and bool(np.any(best_running > worst))
        self.done = not self.improvable or bool(stops.all())
        return beams[chosen], tokens[chosen]

    def best(self, count):
        """The `count` best finished sequences (generated ids), best first."""
        return [list(map(int, beam)) for beam in self.finished[:count]]
