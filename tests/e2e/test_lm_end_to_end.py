"""lm-bible end to end on the task harness's small run: the report beside the Kneser-Ney trigram, the export's
greedy text equal to the run's own, `score` giving the report's perplexity, `kpipe generate --prompt`, and `kpipe
perplexity` in a real process (`kpipe generate`'s real process is tests/e2e/test_names_end_to_end.py's), and every
bad input as one line with exit 2."""

import json
import subprocess
import sys

import pytest

from kpipe.cli.commands import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(task_run):
    run = task_run("lm")  # the task harness's run (tests/e2e/task_harness.py)
    return run.folder, run.export


def kpipe_process(*args, cwd):
    return subprocess.run([sys.executable, "-m", "kpipe", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_the_report_scores_the_model_beside_the_kneser_ney_trigram_and_shows_samples(exported):
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    for figures in (metrics["test"], metrics["baseline"]["test"]):
        assert figures["perplexity_per_word"] > 1 and 0 < figures["bits_per_character"] < 8
        assert figures["words"] == metrics["data"]["words"]["test"]
    assert metrics["baseline"]["discount"] in metrics["baseline"]["discounts_tried"]
    assert metrics["training_tokens_per_second"] > 0
    for sampler in ("greedy", "top_k_40", "top_p_0.9", "random", "beam_4"):
        assert len(metrics["samples"][sampler]["examples"]) == 20
        assert 0 < metrics["samples"][sampler]["distinct_1"] <= 1


def test_kpipe_generate_gives_the_runs_greedy_text(exported, capsys):
    """(A seed repeats a sample across loads: the task harness's server test, seeded top-p, compares the server's
    sample with the SavedModel's.)"""
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    example = metrics["samples"]["greedy"]["examples"][0]
    assert main(["generate", str(export), "--prompt", example["prompt"], "--max-new-tokens",
                 str(metrics["samples"]["max_new_tokens"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"prompt": example["prompt"], "text": example["text"]}


def test_kpipe_generate_beam_search_gives_the_runs_beam_text(exported, capsys):
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    examples = metrics["samples"]["beam_4"]["examples"][:2]
    args = [f"--prompt={example['prompt']}" for example in examples]
    assert main(["generate", str(export), *args, "--beam-search", "--json", "--max-new-tokens",
                 str(metrics["samples"]["max_new_tokens"])]) == 0
    written = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert written == examples


def test_kpipe_perplexity_on_the_test_documents_gives_the_reports_figure(exported, tmp_path):
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.datasets.documents import load_documents

    folder, export = exported
    config = load_pipeline(str(export / "config.toml"))
    (tmp_path / "test.txt").write_text("\n".join(load_documents(config.data).test) + "\n", encoding="utf-8")
    out = kpipe_process("perplexity", str(export), "--file", str(tmp_path / "test.txt"), "--json", cwd=folder)
    assert out.returncode == 0, out.stderr[-2000:]
    figures, report = json.loads(out.stdout), json.loads((export / "metrics.json").read_text())["test"]
    assert figures["perplexity_per_word"] == pytest.approx(report["perplexity_per_word"], rel=1e-5)
    assert figures["bits_per_character"] == pytest.approx(report["bits_per_character"], rel=1e-5)


@pytest.mark.parametrize("options, message", [
    (["--top-p", "0"], "--top-p must be in (0, 1]"),
    (["--top-p", "1.5"], "--top-p must be in (0, 1]"),
    (["--temperature", "-1"], "--temperature must be >= 0"),
    (["--top-k", "100000"], "above the model's vocabulary"),
    (["--max-new-tokens", "1000"], "exceeds the model's context"),
    (["--prefix", "Al"], "are for name generators"),
    (["--beam-search", "--top-p", "0.9"], "--beam-search keeps the likeliest beams"),
])
def test_sampler_settings_out_of_range_are_one_line(exported, options, message, capsys):
    _, export = exported
    assert main(["generate", str(export), "--prompt", "In the beginning", *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_a_prompt_longer_than_the_context_and_no_prompt_are_one_line(exported, capsys):
    _, export = exported
    assert main(["generate", str(export), "--prompt", "word " * 200]) == 2
    assert main(["generate", str(export)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "shorten the prompt" in err[0] and "--prompt" in err[1], err


def test_an_empty_corpus_and_one_shorter_than_a_sequence_are_one_line(tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("\n\n")
    (tmp_path / "short.txt").write_text("".join(f"line {i}\n" for i in range(40)))
    assert main(["run", "lm-bible", "--data", str(tmp_path / "empty.txt")]) == 2
    assert main(["run", "lm-bible", "--data", str(tmp_path / "short.txt"), "--set", "data.validation_fraction=0.2",
                 "--set", "data.test_fraction=0.2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "holds no text" in err[0] and "fewer than one sequence" in err[1], err
    assert not (tmp_path / "saved_models").exists()
