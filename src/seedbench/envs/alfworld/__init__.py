"""ALFWorld for seedbench: the env (`env.ALFWorldEnv`), its TextWorld engine (`engine`) and offline game
generation (`data`). Many instances run in worker processes through the generic
`seedbench.envs.pool.EnvPool`. Nothing heavy is imported here: alfworld/textworld load when the env is made."""
