"""Truth tests written the way people write them: `np.any` / `np.all` and their methods
in guards, masks and counts."""
import numpy as np


def clipped_loss(x, W):
    h = x @ W
    if np.any(h > 3.0):  # rescale when something blew up
        h = h * 0.5
    if (h < -10.0).all():
        h = -h
    rows_positive = np.all(x > 0, axis=1, keepdims=True)
    active = np.any(x > 0, axis=0).sum()
    return np.sum(np.where(rows_positive, h, 2.0 * h) ** 2) + active


def cubic_if_any(x):
    if x.any():
        return np.sum(x ** 3)
    return np.sum(x)


class Gate:
    def __init__(self, threshold):
        self.threshold = threshold

    def __call__(self, x):
        mask = np.abs(x) > self.threshold
        if mask.all(axis=0).any():
            return np.sum(np.tanh(x) * mask)
        return np.mean(x ** 2)
