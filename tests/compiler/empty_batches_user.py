"""Losses written the way training code averages over a batch, a mask or a window that
can come out empty (the last, short batch; a filter that keeps nothing; a window of one
sample with the sample variance): the function then warns and gives nan, and its
gradient with respect to an empty array is an empty array."""
import numpy as np


def mse(pred, target):
    return np.mean((pred - target) ** 2)


class Regressor:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, w, X, y):
        r = X @ w * self.scale - y
        return 0.5 * np.mean(r * r) + 1e-3 * np.sum(w * w)


def masked_mean(x, keep):
    picked = x[keep]
    return np.mean(np.sin(picked)) + np.sum(x) * 0.0


def per_row_mean(X):
    return np.sum(np.mean(X ** 2, axis=1))


def per_column_variance(X):
    return np.sum(np.var(X, axis=0))


def sample_variance(x):
    return np.var(x, ddof=1)


def sample_std(x):
    return np.std(x * 2.0, ddof=1)


def centred_energy(x):
    c = x - np.mean(x)
    return np.sum(c * c) / max(len(x), 1)


# reductions and products of a matrix that may have no rows or no columns
def column_sums(X):
    return np.sum(np.sum(X, axis=0) * 2.0)


def row_means(X):
    return np.sum(X.mean(axis=1)) + X.var(axis=1).sum()


def row_sample_std(X):
    return np.sum(np.std(X, axis=1, ddof=1))


def column_products(X):
    return np.sum(np.prod(X, axis=0))


def column_averages(X):
    return np.sum(np.average(X, axis=0))


def running_totals(X):
    return np.sum(np.cumsum(X, axis=0)) + np.sum(np.cumprod(X, axis=1))


def frobenius(X):
    return np.linalg.norm(X)


def log_partition(X):
    return np.sum(np.log(np.sum(np.exp(X), axis=0)))


def nan_column_means(X):
    return np.sum(np.nanmean(X, axis=0)) + np.sum(np.nansum(X, axis=0))


def diagonal(X):
    return np.trace(X)


def gram(X):
    return np.sum(X.T @ X) + np.einsum("ij,ij->", X, X)


def projected(X):
    return np.sum(X @ np.ones((X.shape[1], 2)))


def centred(X):
    return np.sum((X - np.mean(X, axis=0, keepdims=True)) ** 2)


def contracted(X):
    return np.sum(np.tensordot(X, X, axes=([0], [0])))


def smoothness(X):
    return np.sum(np.diff(X, axis=0) ** 2)
