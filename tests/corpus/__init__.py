"""A corpus of ordinary numpy user functions with Python control flow, for the compiler.

Each module groups functions by theme: branches (if/elif/else, conditional expressions,
boolean conditions, returns in branches), loops (for over range/zip/enumerate/reversed/rows,
break/continue, loop-carried state), whiles (data-dependent while loops), calls (user
functions called from loops and branches, other modules, nested functions and closures),
combined (the constructs mixed) and unsupported (constructs srcgrad refuses, with the
offending line marked by a comment). `helpers_other_module` holds functions the others
call across a module boundary.

The functions are written as a numpy user would write them, with no knowledge of srcgrad;
tests/test_corpus.py registers each with its inputs and runs it through srcgrad, the tape
engine and finite differences.
"""
