"""The `tag` task: a tag per word (named entities, parts of speech). `run.py` (the stages), `signatures.py` (the
export's signatures: raw text -> entities, and pre-split words -> tags), `predict.py` (`kpipe tag`)."""
