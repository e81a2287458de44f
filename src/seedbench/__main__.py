from seedbench.cli import main

raise SystemExit(main())
