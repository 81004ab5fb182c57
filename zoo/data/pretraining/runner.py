"""Running a shard-writing job over the chunks of a corpus: in this process, or as an Apache
Beam pipeline (DirectRunner on this machine's cores, or Dataflow / Flink / Spark unchanged).

A job (`ShardJob`: BERT's sentence pairs, the causal-LM token ids) turns one chunk into one
*part* per output shard, names its output directories and shards, and writes their metadata.
The run is the same whichever engine executes it:

1. `plan_chunks` cuts the corpus (in the launching process; one read of the text).
2. Every chunk writes its parts, `WORK/parts/<dir>/<shard>-<chunk>.tfrecord`, and its counts,
   `WORK/counts/<chunk>.json`. Nothing a chunk writes depends on another chunk or on which
   worker runs it: its random numbers are seeded by (seed, chunk, ...), so any number of
   workers writes the same bytes (a retried chunk rewrites its own files).
3. Each shard is the concatenation of its parts in chunk order (TFRecord files concatenate:
   every record carries its own length and checksums), written to `WORK/<dir>/`.
4. Only when all of that has succeeded does the launching process write the metadata and put
   each `WORK/<dir>` in place of `OUT/<dir>` (`_swap_in`). A failed worker fails the pipeline
   and leaves `OUT` as it was; `WORK`, a hidden directory in `OUT`, is removed either way.

Beam runs steps 2 and 3 (the side input of step 3 on step 2's output makes every shard wait
for every chunk); Beam's own pipeline options pass through (`pipeline_args`).
"""

import contextlib
import functools
import json
import os

from zoo import files
from zoo.progress import bar as progress_bar
from zoo.storage import storage_operation

METADATA = "pretraining.json"  # beside the shards of each output directory


class ShardJob:
    """What an objective writes. Subclasses set `name` and define `directories`,
    `write_chunk` (returning JSON-able counts) and `metadata`; the instance is pickled to Beam
    workers, which build their own tokenizer (`tokenizer()`), so it holds settings and paths.
    """

    name = None

    def __init__(self, vocab, out):
        self.vocab, self.out = vocab, out
        self.work = None  # set by `run_job`
        self._tokenizer = None if isinstance(vocab, (str, os.PathLike)) else vocab

    def __getstate__(self):
        if self._tokenizer is not None and not isinstance(self.vocab, (str, os.PathLike)):
            raise ValueError("a Beam pipeline needs the vocabulary as a path (each worker "
                             "loads its own tokenizer), not a tokenizer object")
        return {**self.__dict__, "_tokenizer": None}

    def load_tokenizer(self):
        raise NotImplementedError

    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = self.load_tokenizer()
        return self._tokenizer

    def directories(self):
        """{directory name under OUT: [shard file names]}."""
        raise NotImplementedError

    def write_chunk(self, chunk):
        raise NotImplementedError

    def metadata(self, counts):
        """{directory name: metadata dict} from the merged counts."""
        raise NotImplementedError

    # --- shared mechanics ---

    def part(self, directory, shard, chunk_index):
        return os.path.join(self.work, "parts", directory, f"{shard:05d}-{chunk_index:06d}"
                            ".tfrecord")

    def writers(self, chunk_index):
        """{directory: [a TFRecordWriter per shard]} for one chunk's parts."""
        import tensorflow as tf

        return {directory: [tf.io.TFRecordWriter(self.part(directory, shard, chunk_index))
                            for shard in range(len(names))]
                for directory, names in self.directories().items()}

    def save_counts(self, chunk_index, counts):
        files.write_text(os.path.join(self.work, "counts", f"{chunk_index:06d}.json"),
                         json.dumps(counts))
        return chunk_index

    def concatenate(self, target, num_chunks, _=None):
        """Shard `target` = (directory, shard) as its parts in chunk order."""
        directory, shard = target
        destination = os.path.join(self.work, directory, self.directories()[directory][shard])
        with files.open(destination, "wb") as out:
            for chunk_index in range(num_chunks):
                part = self.part(directory, shard, chunk_index)
                if not files.exists(part):
                    raise FileNotFoundError(f"{part}: the part of chunk {chunk_index} is "
                                            "missing (its worker did not finish)")
                with files.open(part, "rb") as f:
                    while block := f.read(2**22):
                        out.write(block)
        return destination


def _run_chunk(job, chunk):
    return job.save_counts(chunk.index, job.write_chunk(chunk))


def run_job(job, chunks, pipeline_args=None, progress=None):
    """Write `job`'s directories for `chunks` under `job.out`, replacing them whole.

    Args:
        job: a `ShardJob`.
        chunks: `plan_chunks`'s list.
        pipeline_args: None to run in this process; else Beam pipeline options, e.g.
            `["--runner=DirectRunner", "--direct_num_workers=2",
            "--direct_running_mode=multi_processing"]`.
        progress: file the progress bar writes to (default `sys.stderr`).

    Returns:
        {directory name: metadata}, also written as `OUT/<dir>/pretraining.json`.

    A storage fault (a full or read-only `OUT`) is a `zoo.storage.StorageError` "writing the
    pretraining data OUT: <reason>", also when a Beam worker met it.
    """
    with storage_operation("writing the pretraining data", job.out):
        return _run_job(job, chunks, pipeline_args, progress)


def _run_job(job, chunks, pipeline_args, progress):
    files.makedirs(job.out)
    job.work = files.scratch_directory(job.out, f".{job.name}-")
    targets = [(directory, shard) for directory, names in job.directories().items()
               for shard in range(len(names))]
    try:
        for directory in job.directories():
            files.makedirs(os.path.join(job.work, directory))
            files.makedirs(os.path.join(job.work, "parts", directory))
        files.makedirs(os.path.join(job.work, "counts"))
        if pipeline_args is None:
            for chunk in progress_bar(chunks, desc=job.name, unit=" chunks", leave=False,
                                      disable=len(chunks) < 2, file=progress):
                _run_chunk(job, chunk)
            for target in targets:
                job.concatenate(target, len(chunks))
        else:
            _run_beam(job, chunks, targets, pipeline_args, progress)
        counts = []
        for chunk in chunks:
            path = os.path.join(job.work, "counts", f"{chunk.index:06d}.json")
            if not files.exists(path):
                raise RuntimeError(f"chunk {chunk.index} has no counts ({path}): the pipeline "
                                   "ended without running it")
            with files.open(path) as f:
                counts.append(json.load(f))
        metadata = job.metadata(counts)
        files.rmtree(os.path.join(job.work, "parts"))
        for directory, meta in metadata.items():
            files.write_text(os.path.join(job.work, directory, METADATA),
                             json.dumps(meta, indent=2))
        for directory in metadata:
            _swap_in(os.path.join(job.work, directory), os.path.join(job.out, directory))
    finally:
        files.remove_quietly(job.work)  # parts, counts, and anything not moved in place
    return metadata


def _run_beam(job, chunks, targets, pipeline_args, progress):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    try:
        with _progress(job, len(chunks), progress), \
                beam.Pipeline(options=PipelineOptions(pipeline_args)) as pipeline:
            written = (pipeline
                       | "Chunks" >> beam.Create(chunks)
                       | "Spread chunks" >> beam.Reshuffle()
                       | "Write parts" >> beam.Map(functools.partial(_run_chunk, job)))
            _ = (pipeline
                 | "Shards" >> beam.Create(targets)
                 | "Spread shards" >> beam.Reshuffle()
                 | "Concatenate parts" >> beam.Map(job.concatenate, len(chunks),
                                                   beam.pvalue.AsList(written)))
    except Exception as error:
        raise PipelineError(f"the Beam pipeline ({pipeline_args[0]}) failed, nothing was "
                            f"written to {job.out}: {error}") from error


class PipelineError(RuntimeError):
    """A Beam pipeline failed (a worker's error, or the runner's); its logs tell more."""


@contextlib.contextmanager
def _progress(job, total, file):
    """A progress bar of the chunks done, from the counts files the workers write."""
    import threading

    done = threading.Event()
    bar = progress_bar(total=total, desc=job.name, unit=" chunks", leave=False,
                       disable=total < 2, file=file)
    counts = os.path.join(job.work, "counts")

    def poll():
        while not done.wait(5 if files.is_remote(counts) else 0.5):
            try:
                bar.update(len(files.listdir(counts)) - bar.n)
            except OSError:  # the directory is being removed: the run is over
                return

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        bar.close()


def _swap_in(staging, directory):
    """Replace `directory` (if any) by the complete `staging` directory."""
    if not files.exists(directory):
        files.move_directory(staging, directory)
        return
    aside = files.scratch_directory(os.path.dirname(directory) or ".",
                                    f".{os.path.basename(directory)}-old-")
    old = os.path.join(aside, "old")
    files.move_directory(directory, old)
    try:
        files.move_directory(staging, directory)
    except BaseException:
        files.move_directory(old, directory)  # put the previous data back
        files.rmtree(aside)
        raise
    files.rmtree(aside)
