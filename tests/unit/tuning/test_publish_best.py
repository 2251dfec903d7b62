"""`--export-best` publishes one version per study and best trial, however many tuners of the study end (reliability
finding 20)."""

import threading

from kpipe.tuning.publish import publish_best


def trial_export(folder, marker: str):
    folder.mkdir(parents=True)
    (folder / "saved_model.pb").write_text(marker)
    return folder


def test_tuners_ending_together_publish_the_best_trial_once(tmp_path):
    study, root = tmp_path / "tune", tmp_path / "saved_models" / "p"
    study.mkdir()
    export = trial_export(tmp_path / "trials" / "3", "trial 3")
    start, published = threading.Barrier(4), []

    def tuner():
        start.wait()
        published.append(publish_best(study, "p-1234", 3, export, root))

    threads = [threading.Thread(target=tuner) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(p.name for p in root.iterdir()) == ["1"] and set(published) == {root / "1"}
    assert publish_best(study, "p-1234", 3, export, root) == root / "1"  # a rerun of the finished study too


def test_a_better_trial_or_another_study_publishes_the_next_version(tmp_path):
    study, root = tmp_path / "tune", tmp_path / "saved_models" / "p"
    study.mkdir()
    first = publish_best(study, "p-1234", 3, trial_export(tmp_path / "t3", "trial 3"), root)
    better = publish_best(study, "p-1234", 7, trial_export(tmp_path / "t7", "trial 7"), root)
    other = publish_best(study, "p-5678", 3, trial_export(tmp_path / "o3", "other 3"), root)
    assert [first.name, better.name, other.name] == ["1", "2", "3"]
    assert (better / "saved_model.pb").read_text() == "trial 7"


def test_a_published_version_removed_by_hand_is_published_again(tmp_path):
    import shutil

    study, root = tmp_path / "tune", tmp_path / "saved_models" / "p"
    study.mkdir()
    export = trial_export(tmp_path / "t3", "trial 3")
    shutil.rmtree(publish_best(study, "p-1234", 3, export, root))
    again = publish_best(study, "p-1234", 3, export, root)
    assert (again / "saved_model.pb").read_text() == "trial 3"
