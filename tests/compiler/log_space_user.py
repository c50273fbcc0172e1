"""Log-space recursions as people write them: the log of a zero probability is -inf, so
the table starts at -inf (soft-DTW's R starts at +inf in cost space), and np.logaddexp
meets two -inf's at the table's edge."""
import numpy as np


def soft_dtw(x, y, gamma=0.5):
    """Soft-DTW between series x (n,) and y (m,): a soft minimum over alignments."""
    n, m = x.shape[0], y.shape[0]
    D = (x[:, None] - y[None, :]) ** 2
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = -R[i - 1, j - 1] / gamma
            b = -R[i - 1, j] / gamma
            c = -R[i, j - 1] / gamma
            R[i, j] = D[i - 1, j - 1] - gamma * np.logaddexp(np.logaddexp(a, b), c)
    return R[n, m]


def forward_algorithm(log_init, log_trans, log_emit):
    """log p(observations) of an HMM whose forbidden transitions have log-probability
    -inf (a left-to-right chain)."""
    alpha = log_init + log_emit[0]
    for t in range(1, log_emit.shape[0]):
        nxt = np.full(alpha.shape[0], -np.inf)
        for j in range(alpha.shape[0]):
            acc = -np.inf
            for i in range(alpha.shape[0]):
                acc = np.logaddexp(acc, alpha[i] + log_trans[i, j])
            nxt[j] = acc + log_emit[t, j]
        alpha = nxt
    total = -np.inf
    for j in range(alpha.shape[0]):
        total = np.logaddexp(total, alpha[j])
    return total
