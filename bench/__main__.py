import sys

from bench.run_all import main

sys.exit(main())
