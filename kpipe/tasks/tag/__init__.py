"""The `tag` task: a tag per word (named entities, parts of speech). `run.py` (the stages), `serving.py` (the
export's signatures: raw text -> entities, and pre-split words -> tags), `predict.py` (`kpipe tag`)."""

TAGS_FILE = "tags.json"  # the export's tag names (id order) and the scheme its training files were written in
