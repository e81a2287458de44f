"""ALFWorld for seedbench: the env (`env.ALFWorldEnv`), offline game generation (`data`), worker pool
(`workers.EnvPool`). Nothing heavy is imported here: alfworld/textworld load when the env is made."""
