"""Your own question answering: SQuAD v1.1 or v2.0 JSON documents of any name.

Everything the SQuAD tasks do (zoo_tasks.span_qa: BERT sections 4.2 and 4.3, doc-stride windows,
the span head, n-best answers, the official metrics and, for v2.0, the tuned no-answer
threshold τ), on `data.train_file`, `data.dev_file` and `data.test_file`. The version is
`data.version_2`, or detected from the training file (SQuAD 2.0 marks every question with
"is_impossible"; `zoo.data.readers.squad.squad_version`) and then written there, so the run's
config.yaml keeps it for evaluation and export.
"""

from zoo_tasks.base import own_data_file
from zoo_tasks.span_qa import SpanQATask
from zoo.data.readers.squad import squad_version


class QuestionAnsweringTask(SpanQATask):
    """SQuAD-format question answering on your own files; see the module docstring.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("question_answering", {
        ...     "model": {"preset": "bert_tiny", "vocabulary": "vocab"},
        ...     "data": {"train_file": "faq_train.json", "dev_file": "faq_dev.json"}},
        ...     check_data=False)  # doctest: +SKIP
        >>> task.version  # doctest: +SKIP
        2
    """

    def squad_version(self):
        """`data.version_2`, or the training file's (then written to `data.version_2`)."""
        data = self.config.data
        if data.version_2 is None:
            data.version_2 = squad_version(self.path("train")) == 2
        return 2 if data.version_2 else 1

    def path(self, split):
        """The file of `split`: `data.<split>_file`."""
        return own_data_file(self, split, "a SQuAD v1.1 or v2.0 .json file")

    def read_rows(self, path, **options):
        """(questions, report) of a file, read as the run's SQuAD version."""
        return super().read_rows(path, version=self.version, **options)


__all__ = ["QuestionAnsweringTask"]
