"""The `answer` task: extractive question answering (SQuAD style). `run.py` (the stages), `signatures.py` (the export's
signature: question and context -> the answer span), `predict.py` (`kpipe answer`)."""
