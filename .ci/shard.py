"""A pytest plugin for .ci/gpu: `-p shard` with SHARDS=n SHARD=k keeps every n-th test
from the k-th (the others are deselected), so n processes share one GPU's test run."""
import os


def pytest_collection_modifyitems(config, items):
    n = int(os.environ.get("SHARDS", "1"))
    k = int(os.environ.get("SHARD", "0"))
    keep = [it for i, it in enumerate(items) if i % n == k]
    drop = [it for i, it in enumerate(items) if i % n != k]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
