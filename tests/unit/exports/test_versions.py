import pytest

from kpipe.errors import ModelNotFoundError
from kpipe.exports.versions import resolve_model_dir, versions, write_version


def test_each_write_gets_the_next_version_and_never_overwrites(tmp_path):
    root = tmp_path / "pipe"
    first = write_version(root, lambda d: (d / "saved_model.pb").write_text("one"))
    second = write_version(root, lambda d: (d / "saved_model.pb").write_text("two"))
    assert (first.name, second.name) == ("1", "2")
    assert (first / "saved_model.pb").read_text() == "one"
    assert versions(root) == [1, 2]


def test_failed_write_leaves_nothing_behind(tmp_path):
    root = tmp_path / "pipe"

    def explode(d):
        (d / "half.txt").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_version(root, explode)
    assert list(root.iterdir()) == []


def test_resolve_model_dir_accepts_version_folder_root_or_pipeline_name(tmp_path):
    root = tmp_path / "saved_models" / "pipe"
    for _ in range(2):
        write_version(root, lambda d: (d / "saved_model.pb").write_text("x"))
    assert resolve_model_dir(root / "1") == root / "1"
    assert resolve_model_dir(root) == root / "2"
    assert resolve_model_dir("pipe", tmp_path / "saved_models") == root / "2"
    with pytest.raises(ModelNotFoundError, match="no exported model at 'nope'.*kpipe run"):
        resolve_model_dir("nope", tmp_path / "saved_models")


def test_a_stray_file_named_like_the_next_version_is_skipped_not_spun_on(tmp_path):
    root = tmp_path / "pipe"
    write_version(root, lambda d: (d / "saved_model.pb").write_text("one"))
    (root / "2").write_text("not a version")  # a file: versions() ignores it, the rename cannot take its name
    third = write_version(root, lambda d: (d / "saved_model.pb").write_text("three"))  # used to loop forever
    assert third.name == "3" and versions(root) == [1, 3]


def test_only_ascii_digits_name_versions(tmp_path):
    root = tmp_path / "pipe"
    for name in ("1", "²", "٣", "10"):
        (root / name).mkdir(parents=True)
    assert versions(root) == [1, 10]  # '²'.isdigit() is true and int('²') fails


def test_temporary_folders_of_killed_writers_are_removed_and_live_ones_kept(tmp_path):
    import os
    import socket
    import subprocess
    import sys
    import time

    root = tmp_path / "pipe"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    from kpipe.exports.versions import writer_host

    host = writer_host()
    killed = root / f".tmp-{host}-{int(dead.stdout)}-abc"       # its writer is gone: SIGKILLed mid-export
    live = root / f".tmp-{host}-{os.getpid()}-def"              # a writer of this process, still at work
    elsewhere = root / ".tmp-other-host-1-ghi"                  # another machine's: kept until it is old
    old = root / ".tmp-0123456789abcdef"                        # an older kpipe's name, untouched for weeks
    # Reliability review round 5, finding 21: the same hostname in another PID namespace (a container sharing the
    # volume and the host's network): its PID says nothing here, so it is kept until it is old
    container = root / f".tmp-{socket.gethostname()}~1-{int(dead.stdout)}-jkl"
    from kpipe.exports.versions import tmp_name
    assert f"~{os.stat('/proc/self/ns/pid').st_ino}-{os.getpid()}-" in tmp_name()  # a writer names its namespace
    for folder in (killed, live, elsewhere, old, container):
        (folder / "variables").mkdir(parents=True)
    weeks_ago = time.time() - 30 * 24 * 3600
    os.utime(old, (weeks_ago, weeks_ago))
    version = write_version(root, lambda d: (d / "saved_model.pb").write_text("x"))
    assert sorted(p.name for p in root.iterdir()) == sorted([live.name, elsewhere.name, container.name, version.name])


def test_the_export_is_flushed_to_disk_before_it_is_published(tmp_path, monkeypatch):
    import os

    synced, renamed = [], []
    real_fsync, real_rename = os.fsync, os.rename
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                 real_fsync(fd))[1])
    monkeypatch.setattr(os, "rename", lambda a, b: (renamed.append((len(synced), str(b))), real_rename(a, b))[1])

    def write(d):
        (d / "variables").mkdir()
        (d / "variables" / "variables.index").write_text("index")
        (d / "saved_model.pb").write_text("graph")

    target = write_version(tmp_path / "pipe", write)
    files_synced = [p for p in synced[:renamed[0][0]] if p.endswith(("variables.index", "saved_model.pb"))]
    assert len(files_synced) == 2 and renamed[0][1] == str(target)  # both files, before the publishing rename
