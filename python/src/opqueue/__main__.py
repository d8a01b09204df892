"""`python -m opqueue MODULE:WORKER` is `python -m opqueue.worker MODULE:WORKER`."""
import sys

from .worker import main

sys.exit(main())
