"""The glue per task. Each task module declares a `TaskSpec`; this dict is the one registry."""

from kpipe.tasks import classify, forecast, generate, translate, word2vec

TASKS = {spec.name: spec for spec in (classify.TASK, forecast.TASK, generate.TASK, translate.TASK, word2vec.TASK)}
