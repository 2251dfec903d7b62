"""Configs and registries, without TensorFlow: strict TOML loading, the pipeline and training configs,
the task registry and the named-pipeline registry.
"""
