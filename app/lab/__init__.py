"""The lab: the seeds' GPT-2 small measurements rerun on this machine (experiments, runner, jobs, charts)."""
