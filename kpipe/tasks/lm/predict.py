"""Answering with a language-model export: `kpipe generate --prompt` (its `generate` signature) and `kpipe
perplexity` (its `score` signature). Settings and prompts are checked against the export's own files (its
tokenizer and context) before TensorFlow loads. Imports no training code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from kpipe.errors import KpipeError
from kpipe.portable.export_files import LM_SETTINGS_FILE

SCORE_BATCH = 16


@dataclasses.dataclass(frozen=True)
class SamplerSettings:
    """How to continue a prompt: temperature 0 is greedy; top_k 0 and top_p 1 keep every token; seed -1 draws;
    beam_search: the likeliest of the export's beams instead (no sampling)."""

    max_new_tokens: int = 0   # 0: the export's default (64, or what the context leaves)
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = -1
    beam_search: bool = False

    @classmethod
    def from_options(cls, max_new_tokens: int, temperature: float | None, top_k: int, top_p: float,
                     seed: int | None, beam_search: bool = False) -> "SamplerSettings":
        """The command line's options; --top-k or --top-p without --temperature sample at temperature 1.

        Raises:
            KpipeError: a setting out of its range, or a sampling setting beside --beam-search (one line each).
        """
        if max_new_tokens < 0:
            raise KpipeError(f"--max-new-tokens must be > 0. Received: {max_new_tokens}")
        if temperature is not None and temperature < 0:
            raise KpipeError(f"--temperature must be >= 0 (0 = greedy). Received: {temperature}")
        if not 0 < top_p <= 1:
            raise KpipeError(f"--top-p must be in (0, 1]. Received: {top_p}")
        if top_k < 0:
            raise KpipeError(f"--top-k must be >= 0 (0 = every token). Received: {top_k}")
        if seed is not None and not 0 <= seed < 2 ** 31:
            raise KpipeError(f"--seed must be in [0, 2^31). Received: {seed}")
        sampling = top_k > 0 or top_p < 1
        if beam_search and (sampling or temperature is not None or seed is not None):
            raise KpipeError("--beam-search keeps the likeliest beams and samples nothing: drop --temperature, "
                             "--top-k, --top-p and --seed, or drop --beam-search")
        if temperature is None:
            temperature = 1.0 if sampling else 0.0
        return cls(max_new_tokens, temperature, top_k, top_p, -1 if seed is None else seed, beam_search)


def export_settings(model_dir: Path) -> dict:
    return json.loads((Path(model_dir) / LM_SETTINGS_FILE).read_text(encoding="utf-8"))


def check_prompts(model_dir: Path, prompts: list[str], settings: SamplerSettings) -> None:
    """Prompts and settings against the export's context and vocabulary, with its own tokenizer (no TensorFlow).

    Raises:
        KpipeError: top_k above the vocabulary, a prompt (plus max_new_tokens) longer than the context.
    """
    from kpipe.preprocessing.byte_bpe import ByteBPE
    from kpipe.portable.export_files import TOKENIZER_FILE

    saved = export_settings(model_dir)
    context, vocabulary = saved["sequence_length"], saved["vocabulary_size"]
    if settings.top_k > vocabulary:
        raise KpipeError(f"--top-k {settings.top_k} is above the model's vocabulary of {vocabulary} tokens; use at "
                         f"most {vocabulary} (or 0 for all)")
    longest = max(len(ids) for ids in ByteBPE.load(Path(model_dir) / TOKENIZER_FILE).encode(prompts)) + 1
    if longest >= context:
        raise KpipeError(f"the prompt is {longest - 1} tokens; the model reads at most {context} (its start token "
                         f"included) and writes within them: shorten the prompt")
    if settings.max_new_tokens and longest + settings.max_new_tokens > context:
        raise KpipeError(f"--max-new-tokens {settings.max_new_tokens} after a prompt of {longest - 1} tokens exceeds "
                         f"the model's context of {context} tokens (its start token included); use at most "
                         f"{context - longest}")


def write(model_dir: Path, prompts: list[str], settings: SamplerSettings) -> list[str]:
    """Each prompt's continuation (the text after it), from the export's `generate` signature, or from its portable
    export (no TensorFlow)."""
    check_prompts(model_dir, prompts, settings)
    from kpipe.portable.runtime import is_portable

    if is_portable(model_dir):
        from kpipe.portable.language_model import PortableLanguageModel

        if settings.beam_search:
            raise KpipeError(f"{model_dir} is a portable export, which samples and writes greedily but has no beam "
                             "search; use the SavedModel it came from for --beam-search")
        out = PortableLanguageModel.open(model_dir).generate(
            prompts, settings.max_new_tokens or -1, settings.temperature, settings.top_k, settings.top_p,
            settings.seed)
        return [text.decode("utf-8", "replace") for text in out["text"]]
    import tensorflow as tf

    from kpipe.exports.saved_model import load_saved_model

    signatures = load_saved_model(Path(model_dir)).signatures
    inputs = {"prompt": tf.constant(prompts),
              "max_new_tokens": tf.constant(settings.max_new_tokens or -1, tf.int32)}  # -1: the export's default
    if settings.beam_search and "beam_search" not in signatures:
        raise KpipeError(f"{model_dir} was exported before beam search existed (it has no beam_search signature): "
                         "rerun its pipeline to export one")
    if not settings.beam_search:
        inputs.update(temperature=tf.constant(settings.temperature, tf.float32), top_k=tf.constant(settings.top_k),
                      top_p=tf.constant(settings.top_p, tf.float32), seed=tf.constant(settings.seed))
    out = signatures["beam_search" if settings.beam_search else "generate"](**inputs)
    return [text.decode("utf-8", "replace") for text in out["text"].numpy()]


def read_documents_file(path: str, *, documents: str = "lines") -> list[str]:
    """The documents of a text file, read as training files are (`kpipe.datasets.documents`).

    Raises:
        KpipeError: a missing, undecodable or empty file.
    """
    from kpipe.datasets.documents import DocumentsDataConfig, read_documents

    return read_documents(path, DocumentsDataConfig(source="file", path=path, documents=documents))


def perplexity(model_dir: Path, documents: list[str]) -> dict:
    """Perplexity per word and bits per character of `documents`, from the export's `score` signature (or its
    portable export's, without TensorFlow)."""
    from kpipe.portable.runtime import is_portable

    if is_portable(model_dir):
        from kpipe.portable.language_model import PortableLanguageModel

        score = PortableLanguageModel.open(model_dir).score
    else:
        import tensorflow as tf

        from kpipe.exports.saved_model import load_saved_model

        signature = load_saved_model(Path(model_dir)).signatures["score"]
        score = lambda batch: {k: v.numpy() for k, v in signature(text=tf.constant(batch)).items()}  # noqa: E731
    return {**scored(score, documents), "documents": len(documents)}


def scored(score, texts: list[str]) -> dict:
    """Perplexity per word and bits per character of `texts`, from `score` (a batch of texts -> NumPy arrays
    log_likelihood, words, characters, tokens), summed over batches of `SCORE_BATCH` texts."""
    import numpy as np

    from kpipe.evaluation.language_model import likelihood_figures

    totals = np.zeros(4)
    for start in range(0, len(texts), SCORE_BATCH):
        out = score(texts[start:start + SCORE_BATCH])
        totals += [float(np.sum(out[key], dtype=np.float64)) for key in ("log_likelihood", "words", "characters",
                                                                         "tokens")]
    return likelihood_figures(totals[0], int(totals[1]), int(totals[2]), int(totals[3]))
