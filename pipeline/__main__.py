from .job import main

raise SystemExit(main())
