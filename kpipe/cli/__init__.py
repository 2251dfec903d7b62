"""The `kpipe` command: one parser per command, and the commands' library code (batch prediction,
`kpipe info`, `kpipe compare`).
"""
