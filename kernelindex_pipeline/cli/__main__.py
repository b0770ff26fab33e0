"""`python -m kernelindex_pipeline.cli`: the console script's entry point as a program."""

import sys

from kernelindex_pipeline.cli import main

sys.exit(main())
