"""The recurrent layers a `cell` config value names, shared by every recurrent builder."""

import keras

CELLS = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}
