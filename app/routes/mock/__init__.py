"""Timed mock interviews: `pages` (/mock, shared reports included) and `api` (/api/mock), with
the response models in `models` and what either shows of an interview in `views`."""
