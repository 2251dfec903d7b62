"""`kpipe export`: a classifier, forecaster, word2vec, name-generator or reader export rewritten to run without TensorFlow,
as ONNX or LiteRT.

The network takes numbers (token ids, sparse n-gram features, windows; a generator's characters) and becomes
`model.onnx` (Keras' ONNX export, dynamic batch and length; recurrent classifiers as ONNX's fused LSTM/GRU
operators, `onnx_recurrent`) or `model.tflite` (LiteRT builtin ops only, so the standalone `ai-edge-litert` runs
it: one text per call, resized to its length, except recurrent networks: ids padded to the full sequence length,
because a masked recurrent loop converts only with static shapes; an RNN generator's one-step network takes any
batch). The text preprocessing it needs is written beside it as data (`preprocessing.json`, the vocabulary, the
n-gram idf) for `kpipe.portable.text`. Quantization: "int8" stores int8 weights (per channel for
ONNX; no calibration set needed; see `quantize_onnx` for which activations onnxruntime quantizes too), "float16"
halves the weights (LiteRT only).

The folder sits beside the SavedModel version it came from (`saved_models/NAME/1-onnx`, `1-litert-int8`) and
is written like every export: into a temporary folder, fsynced, renamed into place.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import tomllib
from pathlib import Path

from kpipe.atomic import fsync_tree, publish_folder
from kpipe.errors import KpipeError
from kpipe.portable.export_files import (
    CONFIG_FILE,
    CRF_FILE,
    FEATURES_FILE,
    GENERATOR_FILE,
    KERAS_MODEL_FILE,
    LABELS_FILE,
    LM_SETTINGS_FILE,
    METRICS_FILE,
    MODEL_FILES,
    MULTI_LABEL_FILE,
    PREPROCESSING_FILE,
    READER_FILE,
    TABLES_FILE,
    TAGS_FILE,
    TOKENIZER_FILE,
    VOCABULARY_FILE,
    WORDPIECE_FILE,
    WORDS_FILE,
)
from kpipe.exports import manifest
from kpipe.exports.portable_networks import write_network
from kpipe.tasks.registry import TASKS
from kpipe.exports.versions import tmp_name, resolve_model_dir

log = logging.getLogger(__name__)

QUANTIZATIONS = {"onnx": ("none", "int8"), "litert": ("none", "float16", "int8")}
# A LiteRT tagger's words per sentence (its masked recurrent loop converts with static shapes only): CoNLL-2003's
# longest sentence has 124; the ONNX export takes any length
LITERT_MAX_WORDS = 128
def portable_name(version: str, fmt: str, quantize: str) -> str:
    return f"{version}-{fmt}" + ("" if quantize == "none" else f"-{quantize}")


@dataclasses.dataclass(frozen=True)
class PortablePlan:
    """What `kpipe export` will write, every check done (without TensorFlow)."""

    source: Path
    target: Path
    fmt: str
    quantize: str
    spec: dict
    manifest: dict


def export_portable(model: str | Path, fmt: str, quantize: str = "none",
                    export_dir: str | Path = "saved_models") -> Path:
    """Write the portable export of a classifier export (a version folder, a folder of versions: the latest, or a
    pipeline name) and return its folder (see `plan_portable` for what it refuses)."""
    return write_portable(plan_portable(model, fmt, quantize, export_dir))


def plan_portable(model: str | Path, fmt: str, quantize: str = "none",
                  export_dir: str | Path = "saved_models") -> PortablePlan:
    """Check that `model` can be exported as `fmt` with `quantize`, before TensorFlow loads.

    Raises:
        KpipeError: an unknown format or a quantization the format's runtime cannot run, a task or family that does
            not export (names what does), an export without what the runtime needs, or a target that exists.
    """
    if fmt not in QUANTIZATIONS:
        raise KpipeError(f"unknown format '{fmt}'; use onnx or litert")
    if quantize not in QUANTIZATIONS[fmt]:
        raise KpipeError(f"--quantize {quantize} is not available for {fmt} (kpipe writes float16 networks for "
                         f"litert only); use one of: {', '.join(QUANTIZATIONS[fmt])}")
    source = resolve_model_dir(model, export_dir)
    found = manifest.read(source)
    spec = TASKS.get(found.get("task"))
    if spec is None or found.get("family") not in spec.models or not spec.family(found.get("family")).portable:
        exported = [f"{task.name}: {', '.join(f.name for f in task.families if f.portable)}" for task in TASKS.values()
                    if any(f.portable for f in task.families)]
        raise KpipeError(f"{source} is a {found.get('task')} export of family {found.get('family')}, which kpipe "
                         f"export does not write yet; it writes ONNX and LiteRT for {'; '.join(exported)}")
    config = tomllib.loads((source / CONFIG_FILE).read_text(encoding="utf-8"))
    if config.get("data", {}).get("text_pair_column", ""):
        raise KpipeError(f"{source} classifies pairs of texts; kpipe export handles single texts only")
    target = source.parent / portable_name(source.name, fmt, quantize)
    if target.exists():
        raise KpipeError(f"{target} exists already; delete it to export again (exports are never overwritten)")
    return PortablePlan(source, target, fmt, quantize, preprocessing_spec(source, config, fmt), found)


def write_portable(plan: PortablePlan) -> Path:
    """Write `plan`'s folder: into a temporary folder, flushed, then renamed into place."""
    source, target, fmt, quantize, spec, found = (plan.source, plan.target, plan.fmt, plan.quantize, plan.spec,
                                                  plan.manifest)
    members = spec["members"] if spec["kind"] == "ensemble" else [spec]
    network_files = [name for m in members for name in (m["network"], m.get("start")) if name]
    tmp = source.parent / tmp_name()
    tmp.mkdir()
    try:
        for member in members:
            write_network(source / member["keras"], tmp / member["network"], fmt, quantize, member)
            for name in (member.get("vocabulary"), member.get("idf"), member.get("wordpiece"), member.get("generator"),
                         member.get("reader"), member.get("tables"), member.get("tags"), member.get("tokenizer"),
                         member.get("settings")):
                if name:
                    shutil.copy2(source / name, tmp / name)
        for name in (LABELS_FILE, MULTI_LABEL_FILE, FEATURES_FILE):
            if (source / name).exists():
                shutil.copy2(source / name, tmp / name)
        (tmp / PREPROCESSING_FILE).write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
        (tmp / manifest.MANIFEST_FILE).write_text(json.dumps(
            {**found, "format": fmt, "quantization": quantize, "source_version": source.name,
             "network_files": network_files, "portable_kpipe_version": manifest.kpipe_version()},
            indent=2, sort_keys=True) + "\n", encoding="utf-8")
        fsync_tree(tmp)
        publish_folder(tmp, target)  # a second `kpipe export` of this version at once: one line, not a traceback
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    size = sum((target / name).stat().st_size for name in network_files)
    log.info("Wrote %s (%s, quantization %s, %.1f KiB of network)", target, fmt, quantize, size / 1024)
    return target


def preprocessing_spec(source: Path, config: dict, fmt: str) -> dict:
    """What the runtime needs for each network: the Keras file it comes from, the file it becomes, and how
    `kpipe.portable.text` turns raw strings into its inputs (or, for a forecaster, where its scaling is). An
    ensemble lists its members with their weights (chosen on validation, from the export's metrics.json)."""
    pre, model = config["preprocessing"], config["model"]
    if config.get("task") == "generate":
        common = {"generator": GENERATOR_FILE, "keras": KERAS_MODEL_FILE, "network": MODEL_FILES[fmt],
                  "sequence_length": pre["max_length"] + 1}
        if model["family"] == "char_rnn":  # one step of the cells per call (kpipe.families.char_rnn.step_network)
            start = f"start_{MODEL_FILES[fmt]}" if model.get("conditioning") == "initial_state" else ""
            return {"kind": "char_steps", **common, "start": start}
        return {"kind": "chars", **common}  # the transformer: START, the prefix and the characters so far -> logits
    if config.get("task") == "answer":  # the encoder; windows, offsets and decoding in NumPy (kpipe.portable.reader)
        return {"kind": "reader", "keras": KERAS_MODEL_FILE, "network": MODEL_FILES[fmt], "vocabulary": VOCABULARY_FILE,
                "wordpiece": WORDPIECE_FILE, "reader": READER_FILE, "sequence_length": pre["sequence_length"]}
    if config.get("task") == "lm":  # a decoder step; tokenizing and sampling in NumPy (kpipe.portable.language_model)
        return {"kind": "lm_steps", "keras": KERAS_MODEL_FILE, "network": MODEL_FILES[fmt], "tokenizer": TOKENIZER_FILE,
                "settings": LM_SETTINGS_FILE}
    if config.get("task") == "tag":  # words split, looked up and decoded (Viterbi) in NumPy (kpipe.portable.tagger)
        if not (source / TABLES_FILE).exists():
            raise KpipeError(f"{source} has no {TABLES_FILE} (its word and character tables): an older kpipe exported "
                             "it; run the pipeline again with this kpipe to export it")
        return {"kind": "tagger", "keras": KERAS_MODEL_FILE, "network": MODEL_FILES[fmt], "tables": TABLES_FILE,
                "tags": TAGS_FILE, "crf": CRF_FILE if model.get("output") == "crf" else "",
                "lowercase": pre["lowercase"], "max_word_length": pre["max_word_length"],
                "max_words": LITERT_MAX_WORDS if fmt == "litert" else 0}
    if config.get("task") == "word2vec":  # words looked up in the vocabulary, the vectors' rows gathered
        return {"kind": "word_lookup", "words": WORDS_FILE, "keras": KERAS_MODEL_FILE, "network": MODEL_FILES[fmt]}
    if model["family"] == "rnn_forecaster":  # raw windows: scaled, forecast and unscaled by the runtime
        features = json.loads((source / FEATURES_FILE).read_text(encoding="utf-8"))
        return {"kind": "windows", "window": features["window"], "num_features": len(features["features"]),
                "features": FEATURES_FILE, "keras": KERAS_MODEL_FILE, "network": MODEL_FILES[fmt]}
    if model["family"] != "ensemble":
        return member_spec(source, pre, model, "", fmt)
    if model.get("sequence_members", 1) != 1:
        raise KpipeError(f"{source} is an ensemble of several sequence members, of which the export keeps one Keras "
                         "model; kpipe export handles ensembles with one sequence member")
    report = json.loads((source / METRICS_FILE).read_text(encoding="utf-8"))["ensemble"]
    ngram, recurrent = report["ngram_weight"], report.get("recurrent_weight", 0.0)
    members = [{**member_spec(source, pre, model["ngrams"], "ngrams", fmt), "weight": ngram}]
    if model.get("recurrent"):
        members.append({**member_spec(source, model.get("recurrent_preprocessing") or pre, model["recurrent"],
                                      "recurrent", fmt), "weight": recurrent})
    members.append({**member_spec(source, pre, model["sequence"], "", fmt), "weight": 1.0 - ngram - recurrent})
    return {"kind": "ensemble", "members": members}


def member_spec(source: Path, pre: dict, model: dict, role: str, fmt: str) -> dict:
    """One classifier network's spec; `role` names an ensemble member's files ("ngrams" -> ngrams_model.keras)."""
    prefix = f"{role}_" if role else ""
    family = model.get("family", "rnn_classifier")
    if family == "pretrained_classifier" or (family == "transformer_classifier" and pre.get("tokenizer") == "wordpiece"):
        if not (source / f"{prefix}wordpiece.json").exists():
            raise KpipeError(f"{source} has no {prefix}wordpiece.json: its encoder's tokenizer is not WordPiece (BPE "
                             "and SentencePiece are not exported yet), or an older kpipe exported it; run the "
                             "pipeline again with this kpipe")
        return {"kind": "wordpiece", "keras": f"{prefix}model.keras", "network": f"{prefix}{MODEL_FILES[fmt]}",
                "vocabulary": f"{prefix}vocabulary.txt", "wordpiece": f"{prefix}wordpiece.json",
                "sequence_length": pre["sequence_length"]}
    if pre.get("tokenizer", "words") != "words":
        raise KpipeError(f"{source} uses the {pre['tokenizer']} tokenizer; kpipe export handles word vocabularies")
    files = {"keras": f"{prefix}model.keras", "network": f"{prefix}{MODEL_FILES[fmt]}",
             "vocabulary": f"{prefix}vocabulary.txt"}
    common = {"standardize": pre["standardize"], "split": pre["split"], **files}
    if family in ("rnn_classifier", "transformer_classifier"):  # ids of whole words
        return {"kind": "word_ids", **common, "sequence_length": pre["sequence_length"],
                "truncating": pre["truncating"]}
    if model.get("hashing"):
        raise KpipeError(f"{source} hashes its n-grams (model.hashing=true), which the portable preprocessing does not "
                         "reproduce; train with model.hashing=false to export it as ONNX or LiteRT")
    if not (source / f"{prefix}idf.npy").exists():
        raise KpipeError(f"{source} was exported by an older kpipe without its n-gram idf ({prefix}idf.npy); run the "
                         "pipeline again to export it")
    return {"kind": "ngram_counts", **common, "ngrams": model["ngrams"], "char_ngrams": model["char_ngrams"],
            "weighting": "binary" if model["weighting"] == "nb" else model["weighting"], "idf": f"{prefix}idf.npy"}
