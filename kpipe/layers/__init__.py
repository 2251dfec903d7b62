"""Keras layers that several model families share (each registered for `.keras` loading; see
`kpipe.exports.custom_layers`): attention variants, masked pooling, the classifier head, pair features,
recurrent cells, the character bigram baseline."""
