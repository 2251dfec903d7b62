"""Named pipeline configs; shipped inside kpipe as `kpipe._pipelines` (see pyproject.toml)."""
