"""kpipe's cache folder and XLA's compiled programs kept in it."""

import os

from kpipe.cache import XLA_CACHE_FLAG, cache_root, keep_xla_programs


def test_xla_programs_go_to_the_cache_folder_unless_the_user_names_one(tmp_path, monkeypatch):
    monkeypatch.setenv("KPIPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=0")  # the user's other flags are kept
    keep_xla_programs()
    assert cache_root() == tmp_path
    assert os.environ["TF_XLA_FLAGS"] == f"--tf_xla_auto_jit=0 {XLA_CACHE_FLAG}={tmp_path / 'xla'}"
    keep_xla_programs()  # once is enough
    assert os.environ["TF_XLA_FLAGS"].count(XLA_CACHE_FLAG) == 1
    monkeypatch.setenv("TF_XLA_FLAGS", f"{XLA_CACHE_FLAG}=")  # turned off by the user
    keep_xla_programs()
    assert os.environ["TF_XLA_FLAGS"] == f"{XLA_CACHE_FLAG}="
