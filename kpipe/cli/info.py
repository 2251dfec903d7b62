"""`kpipe info`: what this machine has and can run, for a first check and for bug reports.

Versions of the stack, the devices TensorFlow sees and the strategy "auto" would pick, the optional
data packages (with their licences) and so which bundled pipelines run offline.
"""

from __future__ import annotations

import importlib.metadata
import platform

from kpipe.dependencies import installed

STACK = ("kpipe", "tensorflow", "keras", "keras-hub", "tensorflow-text", "tensorflow-datasets", "scikit-learn",
         "statsforecast", "pandas", "numpy")


def version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def pipeline_needs(config) -> tuple[list[str], str]:
    """(the import names of the optional packages a pipeline needs, where its data comes from)."""
    from kpipe.datasets.embedded import EMBEDDED_DATASETS
    from kpipe.vectors.word_vectors import PACKAGED

    modules, data = [], config.data.describe()
    if config.data.source == "embedded" and config.data.name in EMBEDDED_DATASETS:
        modules.append(EMBEDDED_DATASETS[config.data.name].module)
    elif config.data.source == "tfds":
        data += " (downloads on first use)"
    model = getattr(config.model, "sequence", config.model)  # an ensemble's sequence member
    vectors = getattr(model, "pretrained_embeddings", "")
    if vectors in PACKAGED:
        modules.append(PACKAGED[vectors][0])
    if getattr(config.preprocessing, "tokenizer", "") == "wordpiece":
        modules.append("tensorflow_text")
    return modules, data


def pretrained_download(config) -> tuple[str, str]:
    """The pretrained model a pipeline downloads on its first run (a preset name or handle) and the config key
    that names it, or ("", "") if none."""
    from kpipe.families.pretrained_classifier.config import pretrained_preset
    from kpipe.pretrained.presets import needs_download

    preset, key = pretrained_preset(config.model)
    return (preset, key) if preset and needs_download(preset) else ("", "")


def devices() -> dict:
    """What TensorFlow sees (imports it): devices, CUDA/cuDNN it was built with, the "auto" strategy."""
    import tensorflow as tf

    from kpipe.training.loop import resolve_strategy_name

    build = tf.sysconfig.get_build_info()
    gpus = tf.config.list_physical_devices("GPU")
    return {"cpus": len(tf.config.list_physical_devices("CPU")),
            "gpus": [tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name) for gpu in gpus],
            "built_with_cuda": build.get("cuda_version"), "built_with_cudnn": build.get("cudnn_version"),
            "auto_strategy": resolve_strategy_name("auto")}


def collect() -> dict:
    """Everything `kpipe info` shows, as plain data (the `--json` output)."""
    from kpipe.datasets.embedded import EMBEDDED_DATASETS
    from kpipe.vectors.word_vectors import PACKAGED
    from kpipe.tasks.named_pipelines import load_pipeline, registry

    data_packages = {d.name: {"package": d.package, "licence": d.licence, "installed": installed(d.module)}
                     for d in EMBEDDED_DATASETS.values()}
    data_packages |= {name: {"package": module.replace("_", "-"), "installed": installed(module),
                             "licence": "Apache-2.0 (package); ODC-PDDL (the vectors)"}
                      for name, (module, _) in PACKAGED.items()}
    pipelines = {}
    for name, path in sorted(registry().items()):
        config = load_pipeline(str(path))
        needs, data = pipeline_needs(config)
        missing = [module for module in needs if not installed(module)]
        model_download, preset_key = pretrained_download(config)
        pipelines[name] = {"task": config.task, "data": data, "missing": missing, "model_download": model_download,
                           "preset_key": preset_key,
                           "runs_offline": not missing and "downloads" not in data and not model_download}
    return {"versions": {name: version(name) for name in STACK},
            "python": platform.python_version(), "platform": f"{platform.system()} {platform.machine()}",
            "devices": devices(), "data_packages": data_packages, "pipelines": pipelines}


def format_info(info: dict) -> str:
    """The human-readable `kpipe info`."""
    lines = [f"python {info['python']} on {info['platform']}"]
    lines += [f"{name:20s} {v or 'not installed'}" for name, v in info["versions"].items()]
    d = info["devices"]
    gpus = ", ".join(d["gpus"]) if d["gpus"] else "none"
    lines += ["", f"devices: {d['cpus']} CPU, GPUs: {gpus}; TensorFlow built with CUDA {d['built_with_cuda'] or '-'}, "
              f"cuDNN {d['built_with_cudnn'] or '-'}; strategy 'auto' -> {d['auto_strategy']}", "", "data packages:"]
    for name, p in info["data_packages"].items():
        lines.append(f"  {'ok ' if p['installed'] else 'no '} {name:24s} {p['package']:24s} {p['licence']}")
    lines += ["", "pipelines:"]
    for name, p in info["pipelines"].items():
        state = "runs offline" if p["runs_offline"] else (
            f"needs {', '.join(p['missing'])}" if p["missing"] else
            f"downloads the model {p['model_download']} on first run (or --set {p['preset_key']}=FOLDER)"
            if p["model_download"] else "needs its data downloaded")
        lines.append(f"  {name:26s} {p['task']:10s} {p['data']:36s} {state}")
    if any(p["missing"] for p in info["pipelines"].values()):
        lines.append("\nThe data packages: pip install 'kpipe[data]'")
    return "\n".join(lines)
