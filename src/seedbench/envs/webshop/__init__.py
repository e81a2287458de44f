"""WebShop, offline: the original's shop, search and reward in pure Python (see `seedbench.envs.webshop.env`).

Modules, one job each: `vocabulary` (word lists) → `catalogue` (generated data in the original's file
format) → `products` (the loader for generated and official files) → `goals` (instructions, prices,
splits) → `search` (BM25) → `pages` (page state machine and text rendering) → `reward` and `nouns`
(the purchase score) → `env` (the gymnasium env).
"""
