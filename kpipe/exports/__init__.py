"""Exports: numbered versions written atomically, the kpipe.json manifest, SavedModel writing and
opening (`open_export`), the Keras custom-layer registry, and the run files beside every export.
"""
