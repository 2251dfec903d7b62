"""Two-worker tf.distribute clusters on 127.0.0.1: free ports, TF_CONFIG, workers started and finished."""

from __future__ import annotations

import json
import os
import socket
import subprocess


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def tf_config_env(addresses, index, **extra):
    cluster = {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
    return {**os.environ, "TF_CONFIG": json.dumps(cluster), "TF_CPP_MIN_LOG_LEVEL": "2", **extra}


def start_workers(command, cwd, n=2):
    addresses = [f"127.0.0.1:{port}" for port in free_ports(n)]
    return [subprocess.Popen(command, cwd=cwd, env=tf_config_env(addresses, i), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in range(n)]


def finish(workers, timeout=300):
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=timeout)
        results.append((worker.returncode, out, err))
    return results
