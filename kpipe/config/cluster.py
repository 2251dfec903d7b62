"""The cluster a multi-worker run belongs to, read from `TF_CONFIG` without TensorFlow, so that a missing
or malformed description is reported before TensorFlow loads."""

from __future__ import annotations

import json
import os

from kpipe.errors import ConfigError


def read_tf_config() -> dict:
    """The cluster and this worker's place in it, from the `TF_CONFIG` environment variable.

    Raises:
        ConfigError: TF_CONFIG unset, not JSON, or not a cluster with this task in it.
    """
    raw = os.environ.get("TF_CONFIG")
    example = ('TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
               '"task": {"type": "worker", "index": 0}}\'')
    if not raw:
        raise ConfigError(f"strategy 'multi_worker' needs TF_CONFIG describing the cluster, e.g. {example} "
                          "(see the README, 'Scaling out')")
    try:
        tf_config = json.loads(raw)
        cluster, task = tf_config["cluster"], tf_config["task"]
        addresses = cluster[task["type"]]
        index = int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"TF_CONFIG is not a valid cluster description ({type(error).__name__}: {error}); "
                          f"expected e.g. {example}") from None
    if not 0 <= index < len(addresses):
        raise ConfigError(f"TF_CONFIG task index {index} is out of range: the cluster has {len(addresses)} "
                          f"'{task['type']}' address(es)")
    return tf_config


def cluster_size(tf_config: dict) -> int:
    """Number of chief and worker tasks in the cluster."""
    return sum(len(tf_config["cluster"].get(job, [])) for job in ("chief", "worker"))


def worker_position(tf_config: dict) -> tuple[int, int]:
    """(this task's index among the chief and workers, their number): the chief first, then the workers in order."""
    task = tf_config["task"]
    chiefs = len(tf_config["cluster"].get("chief", []))
    index = int(task["index"]) + (chiefs if task["type"] == "worker" else 0)
    return index, cluster_size(tf_config)
