from seedbench import threads

threads.configure()  # before torch loads: OpenMP reads its wait policy once (seedbench.threads)

from seedbench.cli import main  # noqa: E402

raise SystemExit(main())
