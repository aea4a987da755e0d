"""A reference serving engine over attnc: random-weight transformers models
(model.py), paged attention backends (attention.py), KV storage
(caches.py) and the engine loop (engine.py). Run it with
`PYTHONPATH=python:examples python3 -m engine --help`."""
