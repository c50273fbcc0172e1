"""The benchmark suite: srcgrad, the tape engine and the peers against hand-written numpy.

`python -m benchmarks --help`; the problems live in `benchmarks/problems/`.
"""
