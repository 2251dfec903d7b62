import sys

from kpipe.cli import main

sys.exit(main())
