"""Search-QA, Search-R1's retrieval-tool protocol offline; see `seedbench.envs.search.env` and
docs/search.md. Modules: `kb` (fictional knowledge base and passages), `questions`, `countries`
(countryinfo set), `loaders` (Search-R1 files), `data` (datasets, checksums, `seedbench data search`),
`answers` (normalisation, exact match, extraction, action grammar), `retrieval` (bm25s, HTTP client,
server), `env`, `metrics` (oracle and retrieval scores)."""
