from benchmarks.harness import main

raise SystemExit(main())
