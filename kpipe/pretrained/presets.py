"""Which pretrained encoder a config names, and loading it through keras-hub's `from_preset`.

A preset is what keras-hub understands: a built-in preset name (`all_minilm_l6_v2_en`), a
`kaggle://` or `hf://` handle, or a local folder in keras-hub's preset format or in Hugging Face
format (config.json, vocab.txt, model.safetensors), which keras-hub converts on load. Names and
handles download once into a cache folder; on a machine without the download, loading stops with
one line that says where the cache is and how to point at a local copy instead.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from kpipe.errors import ConfigError, KpipeError

REMOTE_SCHEMES = ("hf://", "kaggle://", "modelscope://")


class PresetUnavailableError(KpipeError):
    """The preset is not on this machine and cannot be downloaded (or is not a checkpoint keras-hub reads)."""


@contextlib.contextmanager
def naming(key: str):
    """This module's errors name the preset's config key as `key` (an ensemble's "model.sequence.preset")
    instead of "model.preset"."""
    try:
        yield
    except (ConfigError, PresetUnavailableError) as error:
        raise type(error)(str(error).replace("model.preset", key)) from None


def is_local(preset: str) -> bool:
    """Whether `preset` names a folder on disk (anything with a path separator, or an existing folder)."""
    return not preset.startswith(REMOTE_SCHEMES) and ("/" in preset or os.sep in preset or Path(preset).is_dir())


def needs_download(preset: str) -> bool:
    """Whether loading `preset` fetches files from a model hub (the first time)."""
    return not is_local(preset)


def cache_folder(preset: str) -> Path:
    """Where keras-hub's downloads of `preset` are cached (Hugging Face's hub cache for hf://, else kagglehub's)."""
    if preset.startswith("hf://"):
        return Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", "~/.cache/huggingface")) / "hub"
                    ).expanduser()
    return Path(os.environ.get("KAGGLEHUB_CACHE", "~/.cache/kagglehub")).expanduser()


# The text encoders keras-hub converts from Hugging Face format (keras_hub/src/utils/transformers).
HUGGING_FACE_TEXT_ENCODERS = ("albert", "bert", "distilbert", "roberta", "xlm-roberta")
POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2}  # positions these models reserve after the padding id


def check_preset(preset: str, sequence_length: int | None = None) -> None:
    """A local preset must be a checkpoint keras-hub can load for kpipe: a folder holding config.json (both
    formats have one); in Hugging Face format, a text encoder keras-hub converts, with safetensors weights;
    with position embeddings for `sequence_length` tokens. Checked before TensorFlow loads.

    Raises:
        ConfigError: one line naming the folder, what is wrong with it and what to do.
    """
    if not preset:
        raise ConfigError('model.preset is empty; name a keras-hub preset (e.g. "all_minilm_l6_v2_en") or a '
                          "checkpoint folder")
    if not is_local(preset):
        return
    folder = Path(preset).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"model.preset folder {preset} does not exist; pass a keras-hub preset folder or a Hugging "
                          "Face checkpoint folder (config.json, vocab.txt, model.safetensors)")
    if not (folder / "config.json").is_file():
        raise ConfigError(f"model.preset folder {preset} has no config.json: not a keras-hub preset nor a Hugging "
                          "Face checkpoint")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if "model_type" in config:
        limit = _check_hugging_face_folder(preset, folder, config)
    else:
        limit = config.get("config", {}).get("max_sequence_length")
    if sequence_length and limit and sequence_length > limit:
        raise ConfigError(f"preprocessing.sequence_length={sequence_length} is more than the {limit} tokens the "
                          f"checkpoint in {preset} has position embeddings for; set preprocessing.sequence_length="
                          f"{limit} or less")


def _check_hugging_face_folder(preset: str, folder: Path, config: dict) -> int | None:
    """Raise ConfigError for a Hugging Face folder kpipe cannot use; return its position limit."""
    kind = config["model_type"]
    if kind not in HUGGING_FACE_TEXT_ENCODERS:
        raise ConfigError(f"model.preset folder {preset} holds a '{kind}' checkpoint, which kpipe cannot fine-tune "
                          "from Hugging Face format; keras-hub converts these text encoders: "
                          f"{', '.join(HUGGING_FACE_TEXT_ENCODERS)}")
    if not any((folder / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json")):
        if any(folder.glob("pytorch_model*.bin")):
            raise ConfigError(
                f"model.preset folder {preset} has PyTorch weights (pytorch_model.bin) only, and keras-hub reads "
                "safetensors; convert them once with: python -c \"from transformers import AutoModel; "
                f"AutoModel.from_pretrained('{folder}').save_pretrained('{folder}', safe_serialization=True)\"")
        raise ConfigError(f"model.preset folder {preset} has no model.safetensors: its weights are missing")
    positions = config.get("max_position_embeddings")
    return positions - POSITION_OFFSET.get(kind, 0) if positions else None


def describe(preset: str) -> dict:
    """What the report says about the preset: its name, and for a local folder its format and architecture."""
    info = {"preset": preset}
    if is_local(preset):
        config = json.loads((Path(preset).expanduser() / "config.json").read_text(encoding="utf-8"))
        hugging_face = "model_type" in config
        info["format"] = "hugging face" if hugging_face else "keras-hub"
        info["architecture"] = config.get("model_type") if hugging_face else config.get("class_name")
    return info


def _unavailable(preset: str, error: Exception) -> PresetUnavailableError:
    reason = " ".join(str(error).split())[:160]
    if is_local(preset):
        return PresetUnavailableError(f"keras-hub could not load the checkpoint in {preset} ({reason}); pass a "
                                      "keras-hub preset folder or a Hugging Face BERT-family checkpoint folder")
    return PresetUnavailableError(
        f"the pretrained model '{preset}' is not downloaded and could not be fetched ({reason}); download it once "
        f"on a machine with internet (keras-hub caches it in {cache_folder(preset)}), or point at a copy on disk "
        "with --set model.preset=/path/to/checkpoint")


def _from_preset(cls, preset: str, **kwargs):
    try:
        return cls.from_preset(preset if not is_local(preset) else str(Path(preset).expanduser()), **kwargs)
    except (OSError, ValueError, KeyError) as error:  # requests' ConnectionError is an OSError
        raise _unavailable(preset, error) from None


def load_backbone(preset: str):
    """The preset's keras-hub `Backbone` with its pretrained weights.

    Raises:
        PresetUnavailableError: not downloaded and no network, or not a checkpoint keras-hub reads.
    """
    import keras_hub

    return _from_preset(keras_hub.models.Backbone, preset)


def backbone_input_names(preset: str) -> set[str]:
    """The inputs the preset's backbone takes (DistilBERT has no segment ids), read off its architecture built
    without its weights."""
    import keras_hub

    backbone = _from_preset(keras_hub.models.Backbone, preset, load_weights=False)
    return {tensor.name.split(":")[0] for tensor in backbone.inputs}


def load_preprocessor(preset: str, sequence_length: int):
    """The preset's `TextClassifierPreprocessor` (its tokenizer, special tokens and packing), cutting or
    padding every text to `sequence_length` tokens, special tokens included; for a family keras-hub has no
    such class for but whose tokenizer has [CLS], [SEP] and padding tokens, BERT's packing of that tokenizer.

    Raises:
        PresetUnavailableError: as `load_backbone`.
    """
    import keras_hub

    try:
        return _from_preset(keras_hub.models.TextClassifierPreprocessor, preset, sequence_length=sequence_length)
    except PresetUnavailableError as error:
        if "Unable to find a subclass of TextClassifierPreprocessor" not in str(error):
            raise
        # keras-hub loads some families' backbone and tokenizer but has no classifier preprocessor for them
        # (ELECTRA in keras-hub 0.32): a WordPiece tokenizer with [CLS] and [SEP] packs as BERT's does.
        tokenizer = _from_preset(keras_hub.tokenizers.Tokenizer, preset)
        if not all(getattr(tokenizer, f"{token}_token_id", None) is not None for token in ("cls", "sep", "pad")):
            raise
        return keras_hub.models.BertTextClassifierPreprocessor(tokenizer=tokenizer, sequence_length=sequence_length)


def load_word_piece_tokenizer(preset: str, sequence_length: int):
    """The preset's tokenizer, which must be WordPiece (BERT's family): the reader computes a WordPiece tokenization's
    offsets, the tagger cuts words into its pieces.

    Raises:
        ConfigError: another tokenizer (BPE, SentencePiece).
        PresetUnavailableError: as `load_backbone`.
    """
    import keras_hub

    tokenizer = load_preprocessor(preset, sequence_length).tokenizer
    if not isinstance(tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
        raise ConfigError(f"model.preset {preset} tokenizes with {type(tokenizer).__name__}; kpipe reads words and "
                          "answer spans through WordPiece: use a BERT-family checkpoint (BERT, DistilBERT, ELECTRA, "
                          "MiniLM)")
    return tokenizer
