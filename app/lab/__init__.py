"""The lab: the seeds' GPT-2 small measurements rerun on this machine (experiments, runner, jobs, charts).

The model it measures is the reference's (graders/reference/gpt2.py); the lab owns no model.
"""
