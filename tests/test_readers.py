"""Readers: hand-written files in each benchmark's official layout, bad input, and fuzzing."""

import json
import logging
import os
import pickle
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zoo.data import BENCHMARKS, DataError, read_examples
from zoo.data.readers import CONLL_TAGS, to_iob2


def write(directory, name, content):
    path = os.path.join(directory, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as file:
        file.write(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def read(task, path, **options):
    return list(read_examples(task, path, **options))


# === GLUE: each file's own columns and header rules ===

COLA_TRAIN = (
    "gj04\t1\t\tOur friends won't buy this analysis, let alone the next one we propose.\n"
    "gj04\t0\t*\tOne more pseudo generalization and I'm giving up.\n"
    'bc01\t0\t*\tHarry coughed himself "into a fit.\n'  # a stray quote: no CSV quoting
)
COLA_TEST = "index\tsentence\n0\tBill whistled past the house.\n1\tThe car honked \"its way.\n"


def test_cola_train_has_no_header_and_test_has_one(tmp_path):
    assert read("glue/cola", write(tmp_path, "train.tsv", COLA_TRAIN)) == [
        {"id": "1", "sentence1": "Our friends won't buy this analysis, let alone the next one "
         "we propose.", "label": "1"},
        {"id": "2", "sentence1": "One more pseudo generalization and I'm giving up.", "label": "0"},
        {"id": "3", "sentence1": 'Harry coughed himself "into a fit.', "label": "0"},
    ]
    assert read("glue/cola", write(tmp_path, "test.tsv", COLA_TEST)) == [
        {"id": "0", "sentence1": "Bill whistled past the house.", "label": None},
        {"id": "1", "sentence1": 'The car honked "its way.', "label": None},
    ]


def test_sst2_keeps_the_trailing_space_of_its_tokenised_sentences(tmp_path):
    train = ("sentence\tlabel\nhide new secretions from the parental units \t0\n"
             "that loves its characters and communicates something rather beautiful about "
             "human nature \t1\n")
    examples = read("glue/sst2", write(tmp_path, "train.tsv", train))
    assert examples[0] == {"id": "2", "sentence1": "hide new secretions from the parental units ",
                           "label": "0"}
    assert examples[1]["label"] == "1"
    test = "index\tsentence\n0\tuneasy mishmash of styles and genres .\n"
    assert read("glue/sst2", write(tmp_path, "test.tsv", test)) == [
        {"id": "0", "sentence1": "uneasy mishmash of styles and genres .", "label": None}]


MRPC_TRAIN = (
    "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    '1\t702876\t702977\tAmrozi accused his brother , whom he called " the witness " , of '
    'deliberately distorting his evidence .\tReferring to him as only " the witness " , Amrozi '
    "accused his brother of deliberately distorting his evidence .\n"
    "0\t2108705\t2108831\tYucaipa owned Dominick 's before selling the chain to Safeway in 1998 "
    "for $ 2.5 billion .\tYucaipa bought Dominick 's in 1995 for $ 693 million and sold it to "
    "Safeway for $ 1.8 billion in 1998 .\n"
)


def test_mrpc_header_with_byte_order_mark_and_unbalanced_quotes(tmp_path):
    examples = read("glue/mrpc", write(tmp_path, "train.tsv", MRPC_TRAIN))
    assert [e["label"] for e in examples] == ["1", "0"]
    assert examples[0]["sentence1"].startswith('Amrozi accused his brother , whom he called " the')
    assert examples[0]["sentence2"].endswith("distorting his evidence .")
    assert examples[0]["id"] == "2"  # no id column in train/dev: the line number
    test = ("index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
            "0\t1089874\t1089925\tPCCW 's chief operating officer will report to Mr So .\t"
            "Current Chief Operating Officer Mike Butcher will report to So .\n")
    assert read("glue/mrpc", write(tmp_path, "test.tsv", test))[0]["label"] is None


def test_qqp_uses_its_id_column(tmp_path):
    train = ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
             "133273\t213221\t213222\tHow is the life of a math student? Could you describe "
             "your own experiences?\tWhich level of prepration is enough for the exam jlpt5?\t0\n")
    assert read("glue/qqp", write(tmp_path, "train.tsv", train)) == [
        {"id": "133273", "sentence1": "How is the life of a math student? Could you describe "
         "your own experiences?", "sentence2": "Which level of prepration is enough for the "
         "exam jlpt5?", "label": "0"}]
    test = "id\tquestion1\tquestion2\n0\tWhy do \"cats purr?\tWhat makes cats purr?\n"
    assert read("glue/qqp", write(tmp_path, "test.tsv", test)) == [
        {"id": "0", "sentence1": 'Why do "cats purr?', "sentence2": "What makes cats purr?",
         "label": None}]


STSB_HEADER = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
               "\tscore\n")


def test_stsb_scores_are_floats(tmp_path):
    train = (STSB_HEADER
             + "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\t"
               "An air plane is taking off.\t5.000\n"
             + "1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man is playing a flute."
               "\tA man is playing a bamboo flute.\t3.800\n")
    examples = read("glue/stsb", write(tmp_path, "train.tsv", train))
    assert [e["label"] for e in examples] == [5.0, 3.8]
    assert examples[0]["sentence2"] == "An air plane is taking off."
    test = (STSB_HEADER.removesuffix("\tscore\n") + "\n"
            + "0\tmain-news\theadlines\t2016\t0001\tnone\tnone\tIt rained.\tRain fell.\n")
    assert read("glue/stsb", write(tmp_path, "test.tsv", test))[0]["label"] is None


MNLI_COLUMNS = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse"
                "\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2")
MNLI_PARSES = ("( ( Conceptually cream ) skimming )\t( Product ( and geography ) )\t(ROOT (S))"
               "\t(ROOT (S))")


def test_mnli_train_dev_and_test_files_differ_in_width(tmp_path):
    train = (MNLI_COLUMNS + "\tlabel1\tgold_label\n"
             f"0\t31193\t31193n\tgovernment\t{MNLI_PARSES}\tConceptually cream skimming has two "
             "basic dimensions - product and geography.\tProduct and geography are what make "
             "cream skimming work. \tneutral\tneutral\n")
    dev = (MNLI_COLUMNS + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n"
           f"0\t63735\t63735n\tslate\t{MNLI_PARSES}\tThe new rights are nice enough\tEveryone "
           "really likes the newest benefits \tneutral\tentailment\tneutral\tneutral\tneutral\t"
           "neutral\n")
    test = (MNLI_COLUMNS + "\n"
            f"0\t31493\t31493\ttravel\t{MNLI_PARSES}\tHierbas are worth a look-out.\tHierbas is "
            "a name worth looking out for.\n")
    assert read("glue/mnli", write(tmp_path, "train.tsv", train)) == [
        {"id": "0", "sentence1": "Conceptually cream skimming has two basic dimensions - product "
         "and geography.", "sentence2": "Product and geography are what make cream skimming "
         "work. ", "label": "neutral"}]
    assert read("glue/mnli", write(tmp_path, "dev_matched.tsv", dev))[0]["label"] == "neutral"
    assert read("glue/mnli", write(tmp_path, "test_matched.tsv", test))[0] == {
        "id": "0", "sentence1": "Hierbas are worth a look-out.",
        "sentence2": "Hierbas is a name worth looking out for.", "label": None}


def test_qnli_rte_wnli(tmp_path):
    qnli = ("index\tquestion\tsentence\tlabel\n0\tWhat came into force after the new "
            "constitution was herald?\tAs of that day, the new constitution heralding the Second "
            "Republic came into force.\tentailment\n")
    assert read("glue/qnli", write(tmp_path, "qnli.tsv", qnli))[0]["sentence1"].startswith("What")
    rte = ("index\tsentence1\tsentence2\tlabel\n0\tNo Weapons of Mass Destruction Found in "
           "Iraq Yet.\tWeapons of Mass Destruction Found in Iraq.\tnot_entailment\n")
    assert read("glue/rte", write(tmp_path, "rte.tsv", rte))[0]["label"] == "not_entailment"
    wnli = ("index\tsentence1\tsentence2\tlabel\n0\tI stuck a pin through a carrot. When I "
            "pulled the pin out, it had a hole.\tThe carrot had a hole.\t1\n")
    assert read("glue/wnli", write(tmp_path, "wnli.tsv", wnli))[0]["label"] == "1"


def test_lines_split_on_newline_only_and_accept_crlf(tmp_path):
    # U+2028, form feed and a lone \r are inside fields: str.splitlines would cut the row there.
    text = ("index\tsentence1\tsentence2\tlabel\r\n"
            "0\tA\u2028B\x0cC\rD\tE\tentailment\r\n")
    assert read("glue/rte", write(tmp_path, "dev.tsv", text)) == [
        {"id": "0", "sentence1": "A\u2028B\x0cC\rD", "sentence2": "E", "label": "entailment"}]


def test_scitail_has_no_header(tmp_path):
    text = ("Pluto rotates once on its axis every 6.39 Earth days;\tEarth rotates on its axis "
            "once times in one day.\tneutral\n"
            "Moon phases are caused by the moon's orbit.\tThe moon's orbit causes its phases.\t"
            "entails\n")
    examples = read("scitail", write(tmp_path, "scitail_1.0_train.tsv", text))
    assert [(e["id"], e["label"]) for e in examples] == [("1", "neutral"), ("2", "entails")]


# === SNLI ===

SNLI = (
    '{"annotator_labels": ["neutral"], "captionID": "3416050480.jpg#4", "gold_label": '
    '"neutral", "pairID": "3416050480.jpg#4r1n", "sentence1": "A person on a horse jumps over a '
    'broken down airplane.", "sentence1_binary_parse": "( ( A person ) jumps )", '
    '"sentence1_parse": "(ROOT (S))", "sentence2": "A person is training his horse for a '
    'competition.", "sentence2_binary_parse": "( A person )", "sentence2_parse": "(ROOT (S))"}\n'
    '{"annotator_labels": ["contradiction", "neutral", "entailment", "neutral", "entailment"], '
    '"captionID": "2267923837.jpg#2", "gold_label": "-", "pairID": "2267923837.jpg#2r1n", '
    '"sentence1": "Children smiling and waving at camera", "sentence2": "The kids are frowning"}\n'
    '{"annotator_labels": ["entailment"], "captionID": "3416050480.jpg#4", "gold_label": '
    '"entailment", "pairID": "3416050480.jpg#4r1e", "sentence1": "A person on a horse jumps '
    'over a broken down airplane.", "sentence2": "A person is outdoors, on a horse."}\n'
)


def test_snli_skips_no_consensus_rows_by_rule_and_says_so(tmp_path, caplog):
    examples = read_examples("snli", write(tmp_path, "snli_1.0_dev.jsonl", SNLI))
    with caplog.at_level(logging.WARNING, logger="zoo.data"):
        rows = list(examples)
    assert [(r["id"], r["label"]) for r in rows] == [("3416050480.jpg#4r1n", "neutral"),
                                                     ("3416050480.jpg#4r1e", "entailment")]
    assert str(examples.report) == \
        "skipped 1 row by rule in snli_1.0_dev.jsonl: 1 no gold label (line 2)"
    assert "no gold label" in caplog.text


# === SQuAD ===

CONTEXT = ("The Denver Broncos defeated the Carolina Panthers 24\u201310 to earn their third "
           "Super Bowl title. The game was played on February 7, 2016, at Levi's Stadium in "
           "Santa Clara, California.")


def squad(qas, version="1.1"):
    return json.dumps({"data": [{"title": "Super_Bowl_50", "paragraphs": [
        {"context": CONTEXT, "qas": qas}]}], "version": version}, ensure_ascii=False)


def test_squad_v1_offsets_count_characters(tmp_path):
    qas = [{"answers": [{"answer_start": 70, "text": "third"}], "question": "Which title?",
            "id": "56be4db0acb8001400a502ec"},
           {"answers": [{"answer_start": 138, "text": "Levi's Stadium"},
                        {"answer_start": 138, "text": "Levi's Stadium"},
                        {"answer_start": 156, "text": "Santa Clara, California"}],
            "question": "Where was the game played?", "id": "56be4db0acb8001400a502ed"}]
    examples = read("squad_v1", write(tmp_path, "dev-v1.1.json", squad(qas)))
    assert examples[0] == {"id": "56be4db0acb8001400a502ec", "question": "Which title?",
                           "context": CONTEXT, "answers": [{"text": "third", "answer_start": 70}],
                           "is_impossible": False}
    assert len(examples[1]["answers"]) == 3


def test_squad_v2_unanswerable_questions(tmp_path):
    qas = [{"question": "Who won?", "id": "a1", "answers": [
               {"text": "Denver Broncos", "answer_start": 4}], "is_impossible": False},
           {"plausible_answers": [{"text": "Carolina Panthers", "answer_start": 32}],
            "question": "Who won the 1990 game?", "id": "a2", "answers": [],
            "is_impossible": True}]
    examples = read("squad_v2", write(tmp_path, "dev-v2.0.json", squad(qas, "v2.0")))
    assert [(e["id"], e["is_impossible"], e["answers"]) for e in examples] == [
        ("a1", False, [{"text": "Denver Broncos", "answer_start": 4}]), ("a2", True, [])]


# === Multiple choice ===

SWAG_HEADER = (",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,"
               "ending3,label\n")
SWAG = (
    SWAG_HEADER
    + '0,anetv_jkn6uvmqwh4,3416,"Members of the procession walk down the street holding small '
      'horn brass instruments. A drum line",Members of the procession walk down the street '
      "holding small horn brass instruments.,A drum line,gold,passes by walking down the street "
      "playing their instruments.,has heard approaching them.,arrives and they're outside "
      "dancing and asleep.,turns the lead singer watches the performance.,0\n"
    + '1,lsmdc3001_21_JUMP_STREET-422,18313,"She says ""hi"", then waves. He","She says ""hi"", '
      'then waves.",He,gen,"waves back,\nsmiling.",leaves.,sits.,"runs, fast.",0\n'
)


def test_swag_is_quoted_csv_with_a_nameless_first_column(tmp_path):
    examples = read("swag", write(tmp_path, "val.csv", SWAG))
    assert examples[0] == {
        "id": "3416",
        "context": "Members of the procession walk down the street holding small horn brass "
                   "instruments.",
        "choices": ["A drum line passes by walking down the street playing their instruments.",
                    "A drum line has heard approaching them.",
                    "A drum line arrives and they're outside dancing and asleep.",
                    "A drum line turns the lead singer watches the performance."],
        "label": 0}
    assert examples[1]["context"] == 'She says "hi", then waves.'
    assert examples[1]["choices"][0] == "He waves back,\nsmiling."
    test = SWAG_HEADER.removesuffix(",label\n") + "\n" + "0,v,7,A b,A,b,gold,c,d,e,f\n"
    assert read("swag", write(tmp_path, "test.csv", test))[0]["label"] is None


STORY = (
    "InputStoryid,InputSentence1,InputSentence2,InputSentence3,InputSentence4,"
    "RandomFifthSentenceQuiz1,RandomFifthSentenceQuiz2,AnswerRightEnding\n"
    "138d5bfb-05cc-41e3-bf2c-fa85ebad14e2,Rick grew up in a troubled household.,\"He never "
    "found good support in family, and turned to gangs.\",It wasn't long before Rick got shot "
    "in a robbery.,The incident caused him to turn a new leaf.,He is happy now.,He joined a "
    "gang.,1\n"
)


def test_story_cloze(tmp_path):
    path = write(tmp_path, "cloze_test_val__spring2016 - cloze_test_ALL_val.csv", STORY)
    assert read("story_cloze", path) == [{
        "id": "138d5bfb-05cc-41e3-bf2c-fa85ebad14e2",
        "context": "Rick grew up in a troubled household. He never found good support in family, "
                   "and turned to gangs. It wasn't long before Rick got shot in a robbery. The "
                   "incident caused him to turn a new leaf.",
        "choices": ["He is happy now.", "He joined a gang."], "label": 0}]


def race_file(answers=("C", "A"), options=None, **extra):
    record = {"answers": list(answers),
              "options": options or [["a", "b", "c", "d"], ["in 1990", "in 1991", "never", "soon"]],
              "questions": ["Which is right?", "Tom went to school _ ."],
              "article": "Tom lives in a town.\nHe went to school in 1990.", "id": "high1.txt"}
    return json.dumps(dict(record, **extra))


def test_race_directory_one_example_per_question(tmp_path):
    write(tmp_path, "RACE/dev/high/1.txt", race_file())
    write(tmp_path, "RACE/dev/middle/7.txt", race_file(answers=("D", "B"), id="middle7.txt"))
    write(tmp_path, "RACE/dev/middle/.DS_Store", b"\x00\x01")
    examples = read("race", tmp_path / "RACE" / "dev")
    assert [(e["id"], e["label"]) for e in examples] == [
        ("high1.txt-0", 2), ("high1.txt-1", 0), ("middle7.txt-0", 3), ("middle7.txt-1", 1)]
    assert examples[1] == {"id": "high1.txt-1", "context": "Tom lives in a town.\nHe went to "
                           "school in 1990.", "question": "Tom went to school _ .",
                           "choices": ["in 1990", "in 1991", "never", "soon"], "label": 0}


def test_race_directory_skips_hidden_files(tmp_path):
    write(tmp_path, "dev/high/1.txt", race_file())
    # macOS AppleDouble metadata (not JSON) next to the real file, and a hidden folder.
    write(tmp_path, "dev/high/._1.txt", b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X")
    write(tmp_path, "dev/.trash/2.txt", race_file(id="trash2.txt"))
    examples = read("race", tmp_path / "dev")
    assert [e["id"] for e in examples] == ["high1.txt-0", "high1.txt-1"]


# === CoNLL-2003 ===

CONLL_IOB2 = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O
. . O O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
1996-08-22 CD I-NP O
"""
CONLL_IOB1 = """-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER
, , O O
Paris NNP I-NP I-LOC
London NNP I-NP B-LOC
"""


def test_conll2003_iob2(tmp_path):
    assert read("conll2003", write(tmp_path, "train.txt", CONLL_IOB2)) == [
        {"words": ["EU", "rejects", "German", "call", "."],
         "tags": ["B-ORG", "O", "B-MISC", "O", "O"]},
        {"words": ["Peter", "Blackburn"], "tags": ["B-PER", "I-PER"]},
        {"words": ["BRUSSELS", "1996-08-22"], "tags": ["B-LOC", "O"]}]


def test_conll2003_iob1_as_is_or_converted(tmp_path):
    path = write(tmp_path, "eng.train", CONLL_IOB1.replace("\n", "\r\n"))
    as_is = read("conll2003", path)
    assert as_is[1]["tags"] == ["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]
    converted = read("conll2003", path, convert_to_iob2=True)
    assert converted[0]["tags"] == ["B-ORG", "O", "B-MISC", "O", "O"]
    assert converted[1]["tags"] == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]
    assert to_iob2(converted[1]["tags"]) == converted[1]["tags"]  # IOB2 stays as it is


# === Image folders ===


def png(seed=0):
    import numpy as np
    import tensorflow as tf

    image = np.random.default_rng(seed).integers(0, 256, (4, 4, 3), dtype=np.uint8)
    return tf.io.encode_png(image).numpy()


def test_image_folder_sorted_classes_nested_folders_and_hidden_files(tmp_path):
    write(tmp_path, "train/zebra/a.png", png())
    write(tmp_path, "train/ant/b.PNG", png(1))
    write(tmp_path, "train/ant/more/c.png", png(2))
    write(tmp_path, "train/ant/.DS_Store", b"\x00")
    write(tmp_path, "train/.hidden/d.png", png(3))
    examples = read_examples("image_folder", tmp_path / "train")
    assert examples.labels == ("ant", "zebra")
    assert [(os.path.relpath(e["path"], tmp_path), e["label"]) for e in examples] == [
        ("train/ant/b.PNG", 0), ("train/ant/more/c.png", 0), ("train/zebra/a.png", 1)]


# === Bad input: an error naming file and line, or skipped, counted and reported ===

RTE_HEADER = "index\tsentence1\tsentence2\tlabel\n"


def test_the_skip_report_names_reasons_and_lines(tmp_path):
    rows = [f"{i}\ta\tb\tentailment" for i in range(11)]
    rows[3] = "3\ta\tb"  # line 5
    rows[7] = "7\ta\tb\tentailment\textra"  # line 9
    rows[10] = "10\ta\tb\tpositive"  # line 12
    path = write(tmp_path, "dev.tsv", RTE_HEADER + "".join(r + "\n" for r in rows))
    with pytest.raises(DataError) as error:
        read("glue/rte", path)
    assert str(error.value) == (f"{path}:5: wrong column count: expected 4 tab-separated "
                                "columns, found 3")
    examples = read_examples("glue/rte", path, skip_bad_rows=True)
    assert len(list(examples)) == 8
    assert str(examples.report) == ("skipped 3 bad rows in dev.tsv: 2 wrong column count "
                                    "(lines 5, 9), 1 unknown label (line 12)")
    assert examples.report.examples == 8 and examples.report.skipped == 3
    assert "expected one of entailment, not_entailment, found 'positive'" in str(
        examples.report.first_errors["unknown label"])


BAD_TSV = [  # task, file text, line, reason
    ("glue/rte", RTE_HEADER + "0\ta\tb\tentailment\n1\ta\tb\tENTAILMENT\n", 3, "unknown label"),
    ("glue/cola", "gj04\t1\t\tGood.\ngj04\t1\tBad, three columns.\n", 2, "wrong column count"),
    ("glue/cola", "gj04\t1\t\tGood.\n\n", 2, "wrong column count"),  # a blank line
    ("glue/sst2", "sentence\tlabel\nfine \t1\nnot sure \t0.5\n", 3, "unknown label"),
    ("glue/stsb", STSB_HEADER + "0\tg\tf\ty\t1\tn\tn\ta\tb\t5.1\n", 2, "unknown label"),
    ("glue/stsb", STSB_HEADER + "0\tg\tf\ty\t1\tn\tn\ta\tb\tnan\n", 2, "unknown label"),
    ("glue/mnli", MNLI_COLUMNS + "\tlabel1\tgold_label\n0\t1\t1n\tg\ta\tb\tc\td\te\tf\tneutral\n",
     2, "wrong column count"),
    ("glue/qqp", "id\tquestion1\tquestion2\tis_duplicate\n", None, "no examples"),
    ("glue/qnli", RTE_HEADER, 1, "unexpected header"),
    ("glue/mrpc", "", None, "empty file"),
    ("scitail", "p\th\tentailment\n", 1, "unknown label"),
]


@pytest.mark.parametrize("task, text, line, reason", BAD_TSV)
def test_bad_rows_in_tab_separated_files(tmp_path, task, text, line, reason):
    path = write(tmp_path, "dev.tsv", text)
    with pytest.raises(DataError) as error:
        read(task, path)
    assert (error.value.path, error.value.where, error.value.reason) == (path, line, reason)
    place = path if line is None else f"{path}:{line}"
    assert str(error.value).startswith(f"{place}: {reason}: expected ")


def test_undecodable_bytes_name_line_and_byte_offset(tmp_path):
    content = (RTE_HEADER.encode() + b"0\ta\tb\tentailment\n" + b"1\tcaf\xe9\tb\tentailment\n"
               + b"2\ta\tb\tentailment\n")
    assert content.index(b"\xe9") == 54
    path = write(tmp_path, "dev.tsv", content)
    with pytest.raises(DataError, match=r"dev.tsv:3: undecodable bytes: expected UTF-8 text, "
                       r"found byte 0xe9 at byte offset 54"):
        read("glue/rte", path)
    examples = read_examples("glue/rte", path, skip_bad_rows=True)
    assert [e["id"] for e in examples] == ["0", "2"]
    assert str(examples.report) == "skipped 1 bad row in dev.tsv: 1 undecodable bytes (line 3)"


def test_undecodable_bytes_in_json(tmp_path):
    path = write(tmp_path, "train-v1.1.json", b'{"data": [],\n "version": "1.1\xff"}')
    with pytest.raises(DataError, match=r"train-v1.1.json:2: undecodable bytes.*0xff at byte "
                       r"offset 29"):
        read("squad_v1", path)


def test_empty_and_header_only_files(tmp_path):
    for task in ("snli", "conll2003", "squad_v1", "swag", "story_cloze"):
        with pytest.raises(DataError, match=r"empty file: expected .*, found 0 bytes"):
            read(task, write(tmp_path, f"{task}.txt", ""), skip_bad_rows=True)
    with pytest.raises(DataError, match="no examples"):
        read("swag", write(tmp_path, "header.csv", SWAG_HEADER))
    with pytest.raises(DataError, match="no examples"):
        read("conll2003", write(tmp_path, "docstart.txt", "-DOCSTART- -X- -X- O\n\n"))


def squad_error(tmp_path, qas, task="squad_v1", version="1.1"):
    path = write(tmp_path, "train.json", squad(qas, version))
    with pytest.raises(DataError) as error:
        read(task, path)
    return str(error.value)


def test_squad_answer_start_must_match_the_text(tmp_path):
    qas = [{"answers": [{"answer_start": 72, "text": "third"}], "question": "q", "id": "q7"}]
    message = squad_error(tmp_path, qas)
    assert message == (f"{tmp_path}/train.json: data[0].paragraphs[0].qas[0] (id 'q7'): "
                       "answer_start does not match the answer text: expected 'third' at "
                       "context[72:77], found 'ird S'")  # 72 is the byte offset, not the char


@pytest.mark.parametrize("qas, task, match", [
    ([{"answers": [], "question": "q", "id": "q1"}], "squad_v1", "no answers"),
    ([{"answers": [{"answer_start": "4", "text": "Denver"}], "question": "q", "id": "q1"}],
     "squad_v1", r"'answer_start' to be an integer, found \"4\""),
    ([{"answers": [{"answer_start": True, "text": "Denver"}], "question": "q", "id": "q1"}],
     "squad_v1", "'answer_start' to be an integer, found true"),
    ([{"answers": [], "question": "q", "id": "q1", "is_impossible": True}], "squad_v1",
     "a SQuAD 2.0 file"),
    ([{"answers": [{"answer_start": 4, "text": "Denver"}], "question": "q", "id": "q1"}],
     "squad_v2", "missing field: expected a field 'is_impossible'"),
    ([{"answers": [{"answer_start": 4, "text": "Denver"}], "question": "q", "id": "q1",
       "is_impossible": True}], "squad_v2", "answers to an unanswerable question"),
    ([{"answers": [{"answer_start": 4, "text": "Denver"}], "id": "q1"}], "squad_v1",
     "missing field"),
])
def test_squad_structure_errors(tmp_path, qas, task, match):
    assert "qas[0] (id 'q1')" in squad_error(tmp_path, qas, task)
    assert pytest.raises(DataError, read, task, tmp_path / "train.json").match(match)


def test_squad_skips_questions_and_broken_paragraphs(tmp_path):
    document = {"data": [{"paragraphs": [
        {"context": CONTEXT, "qas": [
            {"answers": [{"answer_start": 4, "text": "Denver"}], "question": "q", "id": "ok"},
            {"answers": [{"answer_start": 5, "text": "Denver"}], "question": "q", "id": "bad"}]},
        {"context": None, "qas": []}]}, "not an article"]}
    path = write(tmp_path, "train.json", json.dumps(document))
    examples = read_examples("squad_v1", path, skip_bad_rows=True)
    assert [e["id"] for e in examples] == ["ok"]
    assert str(examples.report) == (
        "skipped 3 bad rows in train.json: 1 answer_start does not match the answer text "
        "(data[0].paragraphs[0].qas[1] (id 'bad')), 2 wrong type (data[0].paragraphs[1], data[1])")


def test_invalid_json_names_the_line(tmp_path):
    path = write(tmp_path, "dev-v2.0.json", '{"version": "v2.0",\n "data": [}')
    with pytest.raises(DataError, match=r"dev-v2.0.json:2: invalid JSON: expected a JSON "
                       r"document, found Expecting value at column 11"):
        read("squad_v2", path)
    path = write(tmp_path, "snli.jsonl", SNLI + "{not json\n" + "[1]\n")
    examples = read_examples("snli", path, skip_bad_rows=True)
    assert len(list(examples)) == 2
    assert str(examples.report) == ("skipped 2 bad rows in snli.jsonl: 1 invalid JSON (line 4), "
                                    "1 wrong type (line 5); skipped 1 row by rule in snli.jsonl: "
                                    "1 no gold label (line 2)")


def test_csv_errors(tmp_path):
    bad_quote = SWAG + '2,v,1,x,"a"b,c,gold,e0,e1,e2,e3,1\n'
    with pytest.raises(DataError, match=r"val.csv:5: malformed CSV: expected comma-separated"):
        read("swag", write(tmp_path, "val.csv", bad_quote))
    with pytest.raises(DataError, match=r":2: unknown label: expected one of 1, 2, found '3'"):
        read("story_cloze", write(tmp_path, "s.csv", STORY.replace(",1\n", ",3\n")))
    with pytest.raises(DataError, match=r":1: unexpected header: expected columns InputStoryid"):
        read("story_cloze", write(tmp_path, "s.csv", SWAG))
    short = SWAG + "2,v,1,x,a,b,gold,e0,e1\n"
    examples = read_examples("swag", write(tmp_path, "val.csv", short), skip_bad_rows=True)
    assert len(list(examples)) == 2
    assert str(examples.report) == "skipped 1 bad row in val.csv: 1 wrong column count (line 5)"


def test_race_errors(tmp_path):
    write(tmp_path, "dev/1.txt", race_file(answers=("C", "E")))
    write(tmp_path, "dev/2.txt", race_file(answers=("C",)))
    write(tmp_path, "dev/3.txt", race_file(options=[["a", "b", "c"], ["a", "b", "c", "d"]],
                                           id="high3.txt"))
    write(tmp_path, "dev/4.txt", "")
    with pytest.raises(DataError, match=r"1.txt: questions\[1\]: unknown label: expected one of "
                       r"A, B, C, D, found \"E\""):
        read("race", tmp_path / "dev")
    examples = read_examples("race", tmp_path / "dev", skip_bad_rows=True)
    assert [e["id"] for e in examples] == ["high1.txt-0", "high3.txt-1"]
    assert str(examples.report) == (
        "skipped 4 bad rows in dev: 1 unknown label (1.txt:questions[1]), 1 mismatched lists "
        "(2.txt), 1 wrong options (3.txt:questions[0]), 1 empty file (4.txt)")
    os.makedirs(tmp_path / "empty")
    with pytest.raises(DataError, match="no RACE files"):
        read("race", tmp_path / "empty")


def test_conll_bad_lines_skip_their_sentence(tmp_path):
    text = CONLL_IOB2.replace("call NN I-NP O", "call NN O").replace("Blackburn NNP I-NP I-PER",
                                                                     "Blackburn NNP I-NP I-PERSON")
    path = write(tmp_path, "train.txt", text)
    with pytest.raises(DataError, match=r"train.txt:6: wrong column count: expected 4 "
                       r"columns \(token POS chunk NER\), as the file's first token line, "
                       r"found 3"):
        read("conll2003", path)
    examples = read_examples("conll2003", path, skip_bad_rows=True)
    assert [e["words"] for e in examples] == [["BRUSSELS", "1996-08-22"]]
    assert str(examples.report) == ("skipped 2 bad rows in train.txt: 1 wrong column count "
                                    "(line 6), 1 unknown tag (line 10)")


def test_conll_undecodable_line_drops_its_sentence(tmp_path):
    path = write(tmp_path, "train.txt", CONLL_IOB2.encode().replace(b"German", b"G\xe9rman"))
    examples = read_examples("conll2003", path, skip_bad_rows=True)
    assert [e["words"][0] for e in examples] == ["Peter", "BRUSSELS"]


def test_image_folder_errors(tmp_path):
    write(tmp_path, "train/cat/a.png", png())
    write(tmp_path, "train/cat/notes.txt", "not an image")
    write(tmp_path, "train/dog/b.jpg", b"GIF89a but named jpg is fine" + png())
    write(tmp_path, "train/dog/c.jpg", png()[1:])
    write(tmp_path, "train/README", "stray")
    os.makedirs(tmp_path / "train" / "emu")
    with pytest.raises(DataError, match=r"train/README: file outside a class folder"):
        read("image_folder", tmp_path / "train")
    examples = read_examples("image_folder", tmp_path / "train", skip_bad_rows=True)
    assert [(os.path.basename(e["path"]), e["label"]) for e in examples] == [("a.png", 0),
                                                                             ("b.jpg", 1)]
    assert str(examples.report) == (
        "skipped 4 bad rows in train: 1 file outside a class folder (README), 2 not an image "
        "(cat/notes.txt, dog/c.jpg), 1 empty class folder (emu)")
    with pytest.raises(DataError, match="no class folders"):
        read_examples("image_folder", tmp_path / "train" / "emu")


def test_api_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown task .glue/sst.: expected one of .*glue/sst2"):
        read_examples("glue/sst", "x")
    with pytest.raises(TypeError, match=r"takes options \['convert_to_iob2'\], found \['iob'\]"):
        read_examples("conll2003", "x", iob=True)
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        read_examples("glue/rte", tmp_path / "missing.tsv")
    with pytest.raises(IsADirectoryError, match="task glue/rte reads a file, found a directory"):
        read_examples("glue/rte", tmp_path)


def test_data_errors_pickle():
    error = DataError("dev.tsv", 3, "unknown label", "one of 0, 1", "'2'")
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.where, again.reason) == (str(error), 3, "unknown label")


def test_each_pass_reads_the_file_again_with_a_fresh_report(tmp_path):
    path = write(tmp_path, "dev.tsv", RTE_HEADER + "0\ta\tb\tentailment\n1\ta\n")
    examples = read_examples("glue/rte", path, skip_bad_rows=True)
    assert len(list(examples)) == len(list(examples)) == 1
    assert examples.report.skipped == 1


def test_task_table():
    assert BENCHMARKS["glue/mnli"].labels == ("contradiction", "entailment", "neutral")
    assert (BENCHMARKS["glue/stsb"].kind == "regression"
            and BENCHMARKS["glue/stsb"].labels is None)
    assert BENCHMARKS["conll2003"].labels == CONLL_TAGS
    assert {task.kind for task in BENCHMARKS.values()} == {
        "classification", "regression", "span", "multiple_choice", "tagging", "image"}


# === Fuzzing ===

FILE_TASKS = [task for task in BENCHMARKS if task not in ("race", "image_folder")]
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def read_or_data_error(task, path, skip_bad_rows):
    """Read everything; return the examples, or None if it stopped with a DataError."""
    try:
        return read(task, path, skip_bad_rows=skip_bad_rows)
    except DataError:
        return None


@FUZZ
@given(task=st.sampled_from(FILE_TASKS + ["race"]), content=st.binary(max_size=300),
       skip=st.booleans())
def test_random_bytes_raise_only_data_errors(task, content, skip):
    with tempfile.TemporaryDirectory() as tmp:
        read_or_data_error(task, write(tmp, "input.txt", content), skip)


# Text made of the characters that matter to the formats: separators, quotes, line breaks.
fragments = st.lists(st.sampled_from(
    ["\t", ",", '"', "\n", "\r\n", "\r", " ", "-", "{", "}", "[", "]", ":", "\\", "\ufeff",
     "é", "\u2028", "0", "1", "5.000", "a", "entailment", "neutral", "-DOCSTART-", "B-PER",
     "I-LOC", "O", "index", "sentence", "label", '"data"', '"id"', "null", "true"]),
    max_size=40).map("".join)
HEADERS = ["index\tsentence\n", "sentence\tlabel\n", RTE_HEADER, STSB_HEADER, SWAG_HEADER,
           MNLI_COLUMNS + "\tlabel1\tgold_label\n", STORY.split("\n")[0] + "\n", ""]


@FUZZ
@given(task=st.sampled_from(FILE_TASKS), header=st.sampled_from(HEADERS), body=fragments,
       skip=st.booleans())
def test_format_like_text_raise_only_data_errors(task, header, body, skip):
    with tempfile.TemporaryDirectory() as tmp:
        read_or_data_error(task, write(tmp, "input.txt", header + body), skip)


VALID = {  # task -> a valid file from the tests above, to mutate
    "glue/cola": COLA_TRAIN, "glue/mrpc": MRPC_TRAIN, "snli": SNLI, "swag": SWAG,
    "story_cloze": STORY, "conll2003": CONLL_IOB1,
    "squad_v2": squad([{"question": "Who won?", "id": "a1", "is_impossible": False, "answers": [
        {"text": "Denver Broncos", "answer_start": 4}]}], "v2.0"),
    "race": race_file(),
    "glue/mnli": MNLI_COLUMNS + "\tlabel1\tgold_label\n" + f"0\t1\t1n\tg\t{MNLI_PARSES}\ta\tb"
    "\tneutral\tneutral\n",
}


@FUZZ
@given(task=st.sampled_from(sorted(VALID)), skip=st.booleans(),
       edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3), fragments), max_size=4))
def test_mutated_valid_files_raise_only_data_errors(task, skip, edits):
    text = VALID[task]
    for where, deleted, inserted in edits:  # delete a few characters, insert a fragment
        at = int(where * len(text))
        text = text[:at] + inserted + text[at + deleted:]
    with tempfile.TemporaryDirectory() as tmp:
        read_or_data_error(task, write(tmp, "input.txt", text), skip)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 300) | st.floats(allow_nan=True)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["data", "paragraphs", "context", "qas", "id", "question",
                                       "answers", "text", "answer_start", "is_impossible",
                                       "article", "questions", "options"]), children, max_size=4),
    max_leaves=20)


@FUZZ
@given(task=st.sampled_from(["squad_v1", "squad_v2", "race", "snli"]), value=json_values,
       skip=st.booleans())
def test_random_json_raise_only_data_errors(task, value, skip):
    with tempfile.TemporaryDirectory() as tmp:
        read_or_data_error(task, write(tmp, "input.json", json.dumps(value)), skip)


# Valid rows round-trip exactly. Field text avoids only what the format itself cannot hold.
field = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\n\r\ufeff"),
                max_size=12)
# Task -> (header, example -> row) for the labelled train/dev layout. Files without an id
# column (no header, SST-2, MRPC) use the line number as the id.
GLUE_LAYOUTS = {
    "glue/sst2": ("sentence\tlabel", lambda e: [e["sentence1"], e["label"]]),
    "glue/mrpc": ("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String",
                  lambda e: [e["label"], "1", "2", e["sentence1"], e["sentence2"]]),
    "glue/qqp": ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                 lambda e: [e["id"], "1", "2", e["sentence1"], e["sentence2"], e["label"]]),
    "glue/stsb": (STSB_HEADER.strip("\n"), lambda e: [e["id"], "g", "f", "y", "1", "n", "n",
                                                      e["sentence1"], e["sentence2"],
                                                      f"{e['label']:.3f}"]),
    "glue/mnli": (MNLI_COLUMNS + "\tlabel1\tgold_label",
                  lambda e: [e["id"], "1", "1n", "g", "a", "b", "c", "d", e["sentence1"],
                             e["sentence2"], "neutral", e["label"]]),
    "glue/qnli": ("index\tquestion\tsentence\tlabel",
                  lambda e: [e["id"], e["sentence1"], e["sentence2"], e["label"]]),
    "glue/rte": (RTE_HEADER.strip("\n"),
                 lambda e: [e["id"], e["sentence1"], e["sentence2"], e["label"]]),
    "glue/wnli": (RTE_HEADER.strip("\n"),
                  lambda e: [e["id"], e["sentence1"], e["sentence2"], e["label"]]),
    "glue/cola": (None, lambda e: ["gj04", e["label"], "*", e["sentence1"]]),
    "scitail": (None, lambda e: [e["sentence1"], e["sentence2"], e["label"]]),
}


@st.composite
def glue_files(draw):
    task = draw(st.sampled_from(sorted(GLUE_LAYOUTS)))
    header, to_row = GLUE_LAYOUTS[task]
    examples = []
    for n in range(draw(st.integers(1, 5))):
        line = n + 1 + (header is not None)
        has_id = header is not None and task not in ("glue/sst2", "glue/mrpc")
        example = {"id": draw(field) if has_id else str(line), "sentence1": draw(field)}
        if task not in ("glue/cola", "glue/sst2"):
            example["sentence2"] = draw(field)
        labels = BENCHMARKS[task].labels
        example["label"] = (draw(st.sampled_from(labels)) if labels
                            else draw(st.integers(0, 5000)) / 1000)
        examples.append(example)
    lines = ([header] if header else []) + ["\t".join(map(str, to_row(e))) for e in examples]
    return task, "".join(line + "\n" for line in lines), examples


@FUZZ
@given(glue_files())
def test_tab_separated_rows_round_trip(case):
    task, text, examples = case
    with tempfile.TemporaryDirectory() as tmp:
        assert read(task, write(tmp, "train.tsv", text)) == examples


@FUZZ
@given(st.lists(st.tuples(field, field, field, st.sampled_from(["entailment", "neutral",
                                                                "contradiction", "-"])),
                min_size=1, max_size=5).filter(lambda rows: any(r[3] != "-" for r in rows)))
def test_snli_rows_round_trip(rows):
    text = "".join(json.dumps({"pairID": i, "sentence1": s1, "sentence2": s2, "gold_label": g},
                              ensure_ascii=False) + "\n" for i, s1, s2, g in rows)
    with tempfile.TemporaryDirectory() as tmp:
        assert read("snli", write(tmp, "snli.jsonl", text)) == [
            {"id": i, "sentence1": s1, "sentence2": s2, "label": g} for i, s1, s2, g in rows
            if g != "-"]


@st.composite
def squad_questions(draw):
    context = draw(st.text(min_size=1, max_size=30).filter(str.strip))  # blank: refused
    qas, expected = [], []
    for n in range(draw(st.integers(1, 4))):
        impossible = draw(st.booleans())
        answers = []
        for _ in range(0 if impossible else draw(st.integers(1, 3))):
            start = draw(st.integers(0, len(context) - 1))
            end = draw(st.integers(start + 1, len(context)))
            answers.append({"text": context[start:end], "answer_start": start})
        qa = {"id": f"q{n}", "question": draw(st.text(max_size=10)), "answers": answers,
              "is_impossible": impossible}
        qas.append(qa)
        expected.append(dict(qa, context=context))
    return {"version": "v2.0", "data": [{"paragraphs": [{"context": context, "qas": qas}]}]}, \
        expected


@FUZZ
@given(squad_questions())
def test_squad_questions_round_trip(case):
    document, expected = case
    with tempfile.TemporaryDirectory() as tmp:
        path = write(tmp, "train-v2.0.json", json.dumps(document, ensure_ascii=False))
        assert read("squad_v2", path) == expected


csv_field = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"),
                    max_size=12)


@FUZZ
@given(st.lists(st.tuples(csv_field, csv_field, st.lists(csv_field, min_size=4, max_size=4),
                          st.integers(0, 3)), min_size=1, max_size=4))
def test_swag_rows_round_trip(rows):
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SWAG_HEADER.strip("\n").split(","))
    for n, (sent1, sent2, endings, label) in enumerate(rows):
        writer.writerow([n, "v", f"f{n}", f"{sent1} {sent2}", sent1, sent2, "gold", *endings,
                         label])
    with tempfile.TemporaryDirectory() as tmp:
        assert read("swag", write(tmp, "train.csv", buffer.getvalue())) == [
            {"id": f"f{n}", "context": sent1, "choices": [f"{sent2} {e}" for e in endings],
             "label": label} for n, (sent1, sent2, endings, label) in enumerate(rows)]


word = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1,
               max_size=6).filter(lambda w: w != "-DOCSTART-" and not any(map(str.isspace, w)))


@FUZZ
@given(st.lists(st.lists(st.tuples(word, st.sampled_from(CONLL_TAGS)), min_size=1, max_size=6),
                min_size=1, max_size=4))
def test_conll_sentences_round_trip(sentences):
    text = "-DOCSTART- -X- -X- O\n\n" + "".join(
        "".join(f"{w} NN I-NP {t}\n" for w, t in sentence) + "\n" for sentence in sentences)
    with tempfile.TemporaryDirectory() as tmp:
        assert read("conll2003", write(tmp, "train.txt", text)) == [
            {"words": [w for w, _ in s], "tags": [t for _, t in s]} for s in sentences]


# The two-column `word tag` copies of CoNLL-2003 found in public repositories: each variant
# written out by hand, with the words and IOB2 tags a reader must give.
TWO_COLUMN_WORDS = [["EU", "rejects", "German", "call"], ["Peter", "Blackburn", "Paris",
                                                          "London"]]
TWO_COLUMN_IOB2 = [["B-ORG", "O", "B-MISC", "O"], ["B-PER", "I-PER", "B-LOC", "B-LOC"]]


@pytest.mark.parametrize("separator", [" ", "\t"])
@pytest.mark.parametrize("scheme", ["IOB1", "IOB2"])
@pytest.mark.parametrize("docstart", [True, False])
def test_conll_two_column_layouts(tmp_path, separator, scheme, docstart):
    tags = {"IOB2": TWO_COLUMN_IOB2,
            "IOB1": [["I-ORG", "O", "I-MISC", "O"], ["I-PER", "I-PER", "I-LOC", "B-LOC"]]}[scheme]
    lines = ["-DOCSTART-" + separator + "O", ""] if docstart else []
    for words, sentence_tags in zip(TWO_COLUMN_WORDS, tags):
        lines += [w + separator + t for w, t in zip(words, sentence_tags)] + [""]
    path = write(tmp_path, "test.txt", "\n".join(lines) + "\n")
    examples = read_examples("conll2003", path, convert_to_iob2=True)
    assert [e["words"] for e in examples] == TWO_COLUMN_WORDS
    assert [e["tags"] for e in examples] == TWO_COLUMN_IOB2
    name = "tab" if separator == "\t" else "space"
    converted = " (converted to IOB2)" if scheme == "IOB1" else ""
    assert examples.report.layout == (
        f"2 columns (word tag), {name}-separated, {scheme} tags{converted}, "
        f"{'with' if docstart else 'no'} -DOCSTART- lines")
    # Without conversion the tags are the file's.
    assert [e["tags"] for e in read_examples("conll2003", path)] == tags


def test_conll_layout_is_reported_and_kept_for_the_whole_file(tmp_path, capsys):
    from zoo_cli.main import main as cli

    path = write(tmp_path, "test.txt", "EU\tB-ORG\nrejects\tO\n\nPeter\tB-PER\n")
    assert cli(["data", "check", "conll2003", str(path)]) == 0
    assert "read as 2 columns (word tag), tab-separated, IOB2 tags, no -DOCSTART- lines" in (
        capsys.readouterr().out)
    four = write(tmp_path, "four.txt", CONLL_IOB1)
    examples = read_examples("conll2003", four)
    list(examples)
    assert examples.report.layout.startswith("4 columns (token POS chunk NER), space-separated, "
                                             "IOB1 tags")
    # A four-column line in a two-column file (and the reverse) is a bad row naming the line.
    mixed = write(tmp_path, "mixed.txt", "EU B-ORG\nrejects VBZ B-VP O\n")
    with pytest.raises(DataError, match=r"mixed.txt:2: wrong column count: expected 2 columns "
                       r"\(word tag\), as the file's first token line, found 4"):
        read("conll2003", mixed)
    odd = write(tmp_path, "odd.txt", "EU NNP B-ORG\n")
    with pytest.raises(DataError, match=r"odd.txt:1: wrong column count: expected 2 columns "
                       r"\(word tag\) or 4 columns \(token POS chunk NER\), found 3"):
        read("conll2003", odd)
