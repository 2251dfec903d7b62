"""The `answer` task: extractive question answering (SQuAD style). `run.py` (the stages), `signatures.py` (the export's
signature: question and context -> the answer span), `predict.py` (`kpipe answer`)."""

READER_FILE = "reader.json"          # the export's window settings and whether it may answer "no answer"
ANSWERS_FILE = "test_answers.jsonl"  # the test split's answers, a question per line
