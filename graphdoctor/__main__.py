import sys

from graphdoctor.cli import main

sys.exit(main())
