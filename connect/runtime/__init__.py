"""The Connect runtime: workers, tasks, herders, offsets and status storage."""
