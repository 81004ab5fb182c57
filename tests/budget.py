"""What the test suite may cost: `make test`'s budget and the tests allowed over a minute, each
with its reason (tests/suite_profile.py prints the run against them; tests/test_layout.py checks
that every test over SLOW_S in tests/durations.json, the last measured run, has one here)."""

# `make test`'s wall-clock seconds on 2 cores (docs/measurements.md, "The test suite").
BUDGET_S = 900
# A test (set-up, call and teardown together) over this many seconds needs a reason in SLOW.
SLOW_S = 60
# nodeid -> why it needs over a minute (wall clock under `make test`: 2 workers on 2 cores,
# `make test-benchmark` beside them in CI).
_T = "tests/"
SLOW = {
    _T + "test_span_qa.py::test_squad_v2_trains_and_tunes_the_null_threshold":
        "trains SQuAD v2.0 from scratch, 128 wide, 12 epochs: fewer epochs or a smaller batch "
        "missed the F1 margins (measured in the file)",
    _T + "test_span_qa.py::test_squad_v1_trains_far_above_the_empty_answer":
        "with ZOO_ALL_STYLES=1, trains SQuAD v1.1 and v2.0 from scratch, 128 wide, 12 epochs "
        "(measured in the file)",
    _T + "test_docs.py::test_the_python_examples_of_the_readme_and_the_docs_run":
        "runs every Python example of the README and the site as a user would, trainings and "
        "exports included",
    _T + "test_serve_hub.py::test_the_export_records_the_repo_and_commit_and_has_a_run_s_"
         "signatures":
        "its module fixture makes the Hub heads, serves them from a local Hub server and "
        "exports each with zoo export --model",
    _T + "test_jax_distribution.py::test_model_fit_with_a_task_runs_on_jax":
        "starts a JAX process with two devices and fits a task there; shares that start-up "
        "with the other JAX checks",
    _T + "test_crash_consistency.py::test_a_kill_during_a_backup_write_and_a_damaged_backup_"
         "cost_nothing":
        "its module fixture starts eleven zoo train processes (faults at chosen writes, then "
        "again), each paying TensorFlow's start-up",
    _T + "test_generate_cli.py::test_an_export_generates_as_its_run":
        "exports the run's causal LM with every generation signature and calls them in a "
        "fresh serving process",
    _T + "test_reproduce.py::test_a_killed_reproduction_resumes_without_retraining_and_ends_"
         "with_the_same_table":
        "kills a zoo reproduce process after a backup and runs it again, two processes with "
        "pretraining and fine-tuning cells",
    _T + "test_generation_export.py::test_greedy_equals_a_loop_of_full_forward_passes":
        "its module fixture pretrains the LM and exports it; the reference runs the Keras "
        "model on every prefix",
    _T + "test_multiple_choice_export.py::test_export_equals_the_python_pipeline[race-gpt1]":
        "trains RACE in GPT-1 style and exports it, then serves every dev example in a fresh "
        "process",
    _T + "test_export.py::test_a_sentence_pair_export_answers_like_the_pipeline":
        "first user of the shared MRPC run (trained once per session) and of the export and "
        "serving process",
    _T + "test_multi_worker.py::test_a_killed_worker_restarts_with_the_chief_and_resumes_"
         "from_the_backup":
        "two MultiWorkerMirroredStrategy processes, one killed after a backup and both started "
        "again",
    _T + "test_dynamic_padding.py::test_cut_batches_keep_every_label_and_the_predictions"
         "[swag_gpt1]":
        "builds and predicts the SWAG dev set padded and cut for a GPT-1 model, four choices "
        "an example",
    _T + "test_text_classification.py::test_a_csv_of_reviews_trains_and_its_labels_are_kept_"
         "in_the_run":
        "its module fixture trains and exports the file's four runs (CSV reviews, JSON lines "
        "pairs, several labels a row, scores)",
    _T + "test_tagging.py::test_feature_based_experiment_writes_the_table[reduced]":
        "trains BERT Table 7's two feature-based rows for 10 epochs each: at 6 both scored F1 "
        "0.0 (measured in the file)",
    _T + "test_reproduce.py::test_the_imdb_table_runs_from_review_folders_beside_bag_of_words"
         "_and_transformers":
        "runs the IMDB table end to end: corpus, pretraining, two fine-tuned rows, bag of words "
        "and transformers",
    _T + "test_generation_export.py::test_a_causal_bert_export_generates_as_the_python_"
         "generator":
        "pretrains a left-to-right BERT, exports its generation signatures and serves them in "
        "a fresh process",
    _T + "test_training.py::test_a_run_directory_has_the_documented_layout":
        "zoo train, then the same command twice more (refused), zoo evaluate, zoo score and "
        "the TensorBoard events",
    _T + "test_reproduce.py::test_a_tables_subset_is_stratified_seeded_and_read_by_its_cells":
        "five zoo reproduce calls on a table subset, each building its rows; the "
        "bag-of-words row trains",
    _T + "test_reproduce.py::test_zero_shot_columns_read_the_checkpoint_of_each_rows_updates":
        "pretrains GPT-1 keeping a checkpoint per evaluation, then scores zero-shot columns "
        "from each",
    _T + "test_lora.py::test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one":
        "its module fixture trains LoRA twice, once killed and resumed; the reference is PEFT "
        "on the same weights",
    _T + "test_multi_worker.py::test_two_workers_end_with_the_weights_of_one_process":
        "its module fixture runs two worker processes and one single-process reference on the "
        "same global batch",
    _T + "test_convert.py::test_conversions_match_reference_models[jax]":
        "converts every checkpoint kind and runs each under JAX in a fresh process against "
        "the transformers models",
    _T + "test_multiple_choice.py::test_task_trains_beats_chance_and_score_agrees[race-bert]":
        "trains RACE 128 wide for 8 epochs from scratch: at 6 epochs or 64 wide it missed its "
        "margin (measured in the file)",
    _T + "test_multiple_choice.py::test_task_trains_beats_chance_and_score_agrees[swag-gpt1]":
        "trains SWAG in GPT-1 style for 4 epochs from scratch, then converts and scores it "
        "(margin measured in the file)",
    _T + "test_multiple_choice.py::test_task_trains_beats_chance_and_score_agrees"
         "[story_cloze-bert]":
        "trains Story Cloze for 10 epochs from scratch: after 8 it met its margin exactly "
        "(measured in the file)",
    _T + "test_multi_worker.py::test_pretraining_builds_one_input_pipeline_per_worker":
        "two MultiWorkerMirroredStrategy worker processes pretrain, each TensorFlow start-up "
        "paid again",
    _T + "test_export.py::test_a_run_trained_on_another_backend_exports_and_answers_like_its_"
         "evaluation[torch]":
        "trains and evaluates a run in a torch process, then exports it and serves every dev "
        "example in the serving process",
    _T + "test_export.py::test_gpt1_similarity_regression_exports_a_score":
        "trains GPT-1 on STS-B (both sentence orders), exports it and serves the dev set in "
        "the serving process; 17 CPU-s, over a minute as one of the first tests, beside the "
        "benchmark and test-pythons",
    _T + "test_export.py::test_the_lstm_of_gpt1_table5_pretrains_fine_tunes_and_serves":
        "pretrains GPT-1 Table 5's LSTM, fine-tunes it, exports it and serves it in a fresh "
        "process",
    _T + "test_crash_consistency.py::test_a_run_on_a_disk_that_fills_during_a_backup_resumes_"
         "once_space_is_freed":
        "a zoo train process on a small tmpfs that fills during a backup, then the same "
        "command again once freed",
    _T + "test_training.py::test_mirrored_strategy_over_two_cpu_devices":
        "a zoo train process with MirroredStrategy over two CPU devices, TensorFlow's start-up "
        "paid in it",
    # `make test-benchmark` (tests/test_benchmark.py, a run of its own after `make test`).
    _T + "test_benchmark.py::test_benchmark_all_tiny_writes_every_section_and_the_libraries_"
         "agree[generate]":
        "half of zoo benchmark all --tiny: generation, the journey, data, bucketing and "
        "embeddings, each library in its own processes",
    _T + "test_benchmark.py::test_benchmark_all_tiny_writes_every_section_and_the_libraries_"
         "agree[models]":
        "half of zoo benchmark all --tiny: models, fine-tuning, pretraining, serving and "
        "tokenizers, each library in its own processes",
}
