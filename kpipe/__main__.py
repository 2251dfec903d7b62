import sys

from kpipe.cli.commands import main

sys.exit(main())
