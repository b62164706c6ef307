"""``python -m harness``: see :mod:`harness.cli.main` (``main`` stays importable from here)."""
from harness.cli.main import main

if __name__ == "__main__":
    main()
