"""The `lm` task: a language model on sub-words, learnt from running text, that writes from a prompt and scores any
text. `run.py` (the stages), `signatures.py` (the export's signatures: generate, score), `predict.py` (`kpipe generate
--prompt`, `kpipe perplexity`)."""
