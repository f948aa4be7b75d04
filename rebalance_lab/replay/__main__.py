"""``python -m rebalance_lab.replay INPUT... --out DIR`` (or ``--input ... --output ...``), also under spark-submit:

    spark-submit --master yarn --py-files rebalance_lab.zip rebalance_lab/replay/__main__.py \\
        --input /logs/server.log --output /data/replay

Under spark-submit the master and the Python interpreter come from spark-submit (spec §6.6).
"""

from __future__ import annotations

import sys

from rebalance_lab.replay.cli import main

if __name__ == "__main__":
    sys.exit(main())
