# SPDX-License-Identifier: MIT
"""stagebench's cluster tools: the launcher (stagebench-cluster), the simulation on one machine
(stagebench-sim), the collector (stagebench-collect) and the nightly wrapper (stagebench-cron),
as one package. Each command in bin/ is a thin front end calling stagebench.command.run."""
