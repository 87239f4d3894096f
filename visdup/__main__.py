from __future__ import annotations

import sys

from visdup.cli import main

sys.exit(main())
