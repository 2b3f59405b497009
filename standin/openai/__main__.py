"""`python -m standin.openai`: an OpenAI-compatible HTTP stand-in for tests and benchmarks."""

import sys

from standin.openai.cli import main

sys.exit(main())
