"""`python -m zensim.cli`: the `zensim` command."""

import sys

from zensim.cli import main

sys.exit(main())
