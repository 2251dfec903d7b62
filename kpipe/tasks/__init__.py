"""The code of each task: data -> model -> training -> evaluation -> export. The registry of tasks
(config types, families, rules) is `kpipe.task_specs.TASKS`, which loads a task's module when it runs."""
