# absolute, so that spark-submit can run this file as a script (docs/operations.md, "Outgrowing one machine")
from minikafka.pipeline.job import main

raise SystemExit(main())
