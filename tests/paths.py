"""Where things are, for tests in any folder under tests/ (no imports of the project)."""
import os

#: the tests/ folder (shared helpers, corpus, golden files)
TESTS = os.path.dirname(os.path.abspath(__file__))
#: the checkout's root
ROOT = os.path.dirname(TESTS)
