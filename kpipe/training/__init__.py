"""The run lifecycle: `Run` (work folder, lock, publish), the training loop, exact resume,
multi-worker training, learning-rate schedules and checkpoint averaging.
"""
