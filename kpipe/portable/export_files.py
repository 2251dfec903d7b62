"""Every file an export (a pipeline's version folder) can hold, named once: the code that writes a file and the
code that reads it, with TensorFlow or without, take its name from here."""

# Every export
MANIFEST_FILE = "kpipe.json"              # what the export is: task, family, signatures, portable formats
KERAS_MODEL_FILE = "model.keras"          # the trained model (a translator ensemble's others: member2.keras, ...)
CONFIG_FILE = "config.toml"               # the pipeline config that made it, as run
METRICS_FILE = "metrics.json"             # the report: test figures beside the baselines, the epochs' history
HISTORY_FILE = "history.csv"              # the epochs' figures, a row each
CURVES_FILE = "training_curves.png"       # the epochs' figures, plotted

# Portable exports (kpipe export --format onnx|litert)
MODEL_FILES = {"onnx": "model.onnx", "litert": "model.tflite"}  # the network, by format
PREPROCESSING_FILE = "preprocessing.json"  # the networks and the NumPy preprocessing around them

# Per task
LABELS_FILE = "labels.txt"                # classify: the class (or label) names, in id order
VOCABULARY_FILE = "vocabulary.txt"        # classify: the token vocabulary; answer: the word pieces
MULTI_LABEL_FILE = "multi_label.json"     # classify: label names, thresholds and separator of a multi-label export
FEATURES_FILE = "features.json"           # classify: n-gram tables; forecast: input columns, horizon, intervals
WORDPIECE_FILE = "wordpiece.json"         # answer (and pretrained classifiers' portable exports): WordPiece settings
READER_FILE = "reader.json"               # answer: the window settings and whether it may answer "no answer"
ANSWERS_FILE = "test_answers.jsonl"       # answer: the test split's answers, a question per line
GENERATOR_FILE = "generator.json"         # generate: characters, categories, the longest name
LM_SETTINGS_FILE = "language_model.json"  # lm: the context length and vocabulary size
TOKENIZER_FILE = "tokenizer.json"         # lm: the byte-level BPE's vocabulary and merges
TAGS_FILE = "tags.json"                   # tag: the tag names (id order) and the scheme of the training files
TABLES_FILE = "tagger_tables.json"        # tag: an rnn_tagger's word and character tables
CRF_FILE = "crf.npz"                      # tag: a CRF's transition scores, for a portable export's Viterbi
TRANSLATOR_FILE = "translator.json"       # translate: token tables and decoding settings
WORDS_FILE = "words.txt"                  # word2vec: the words, in id order (portable exports)
VECTORS_FILE = "vectors.txt"              # word2vec: the vectors in GloVe's text format
PROJECTOR_VECTORS_FILE = "vectors.tsv"    # word2vec: the vectors for the TensorBoard projector
PROJECTOR_METADATA_FILE = "metadata.tsv"  # word2vec: the projector's words
