# absolute, so that spark-submit can run this file as a script (README, "Outgrowing one machine")
from pipeline.job import main

raise SystemExit(main())
