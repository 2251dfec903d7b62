"""The recurrent layers a `cell` config value names, shared by every recurrent builder."""

import keras

from kpipe.layers.settings import CELL_CLASSES

CELLS = {name: getattr(keras.layers, cls) for name, cls in CELL_CLASSES.items()}
