"""The viewer page: one HTML document with its CSS and JavaScript inline (no CDN, no network).

It loads ``data/index.js`` (one compact row per episode), filters those rows (iteration, phase, outcome,
invalid steps, task type), groups them by (iteration, phase, group), shows `GROUPS_PER_PAGE` groups per
page and loads the data chunks of the shown groups only. A group's episodes sit side by side: a GRPO group
shares its start state, so this is what the advantage compared. Each step shows the observation (and the
frame of vision envs), the raw output, the parsed action, validity and reward; a SEED trajectory shows its
skill and summary, and steps with saved token signals colour each response token by the gate (or by
teacher − student log-prob). When the page has drawn, ``#status`` carries ``data-ready="1"`` and the
milliseconds it took in ``data-render-ms`` (the browser test reads both).
"""

PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>seedbench viewer</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
header{background:#1d3557;color:#fff;padding:10px 16px}header h1{font-size:18px;margin:0 0 4px}
header .meta{font-size:12px;opacity:.85}
#controls{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccd;padding:8px 16px;z-index:2;display:flex;flex-wrap:wrap;gap:10px;align-items:center}
#controls label{font-size:12px}#status{font-size:12px;color:#555;margin-left:auto}
main{padding:12px 16px}
.group{background:#fff;border:1px solid #d5d9e0;border-radius:6px;margin-bottom:16px}
.group>h2{font-size:14px;margin:0;padding:8px 12px;background:#eef1f6;border-bottom:1px solid #d5d9e0}
.members{display:flex;gap:10px;overflow-x:auto;padding:10px}
.episode{flex:0 0 420px;min-width:0;border:1px solid #d5d9e0;border-radius:6px;padding:8px;background:#fcfcfd}
.episode.won{border-top:4px solid #2a9d8f}.episode.lost{border-top:4px solid #e63946}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;margin-right:4px;background:#e3e6eb}
.badge.ok{background:#cdeee9}.badge.bad{background:#f8d0d3}
.skill{background:#fff8e1;border:1px solid #f0d999;border-radius:4px;padding:6px;margin:6px 0;font-size:13px}
.skill b{display:block;font-size:11px;text-transform:uppercase;color:#8a6d00}
.step{border-top:1px dashed #ccd;padding:6px 0}.step .head{font-size:12px;color:#444}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;font:12px/1.35 ui-monospace,monospace;background:#f1f3f6;padding:4px;border-radius:3px}
.out{background:#eef6ff}.tokens{font:12px/1.9 ui-monospace,monospace;margin:4px 0;overflow-wrap:anywhere}
.tok{padding:1px 0;border-radius:2px;white-space:pre-wrap;border-right:1px solid #c9ced6}
.legend{font-size:11px;display:flex;align-items:center;gap:4px}.legend .bar{width:120px;height:10px;background:linear-gradient(90deg,rgb(215,48,39),#fff,rgb(26,152,80))}
img.frame{max-width:100%;image-rendering:pixelated;border:1px solid #ccd;margin:4px 0}
nav.pager button{margin:0 2px}
</style></head>
<body>
<header><h1 id="title">seedbench run</h1><div class="meta" id="meta"></div></header>
<div id="controls">
 <label>iteration <select id="f-it"></select></label>
 <label>phase <select id="f-phase"></select></label>
 <label>outcome <select id="f-won"><option value="">all</option><option value="1">success</option><option value="0">failure</option></select></label>
 <label>invalid steps <select id="f-inv"><option value="">all</option><option value="1">with invalid</option><option value="0">none invalid</option></select></label>
 <label>task type <select id="f-type"></select></label>
 <label>colour tokens by <select id="f-colour"><option value="gate">gate</option><option value="gap">teacher − student log-prob</option></select></label>
 <span class="legend"><span id="legend-lo">0</span><span class="bar"></span><span id="legend-hi">1</span></span>
 <nav class="pager"><button id="prev">&larr;</button><span id="page"></span><button id="next">&rarr;</button></nav>
 <span id="status" data-ready="0">loading…</span>
</div>
<main id="groups"></main>
<script>
"use strict";
const T0 = performance.now();
const GROUPS_PER_PAGE = 8;
let INDEX = null; const CHUNKS = {}; const PENDING = {};
let state = {page: 0}; const FIRST_ROW = {};
function SEEDBENCH_INDEX(data) { INDEX = data; }
function SEEDBENCH_CHUNK(n, episodes) { CHUNKS[n] = episodes; (PENDING[n] || []).forEach(f => f()); delete PENDING[n]; }
function loadChunk(n) {
  return new Promise(resolve => {
    if (CHUNKS[n]) return resolve();
    if (PENDING[n]) { PENDING[n].push(resolve); return; }
    PENDING[n] = [resolve];
    const s = document.createElement("script"); s.src = INDEX.chunks[n].file; document.head.appendChild(s);
  });
}
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (k === "class") e.className = v; else e.setAttribute(k, v); }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}
function option(select, value, text) { select.append(el("option", {value: value}, text)); }
function fmt(x) { return (typeof x === "number") ? (Math.round(x * 1000) / 1000) : (x === null || x === undefined ? "–" : String(x)); }
function setup() {
  const r = INDEX.run;
  INDEX.episodes.chunk.forEach((c, i) => { if (!(c in FIRST_ROW)) FIRST_ROW[c] = i; });
  document.getElementById("title").textContent = r.name || "seedbench run";
  const finals = Object.entries(r.final || {}).map(([k, v]) => k + "=" + fmt(v)).join(" · ");
  document.getElementById("meta").textContent = [r.env, r.agent, r.model, "seed " + r.seed,
    (r.iterations_done ?? "?") + "/" + (r.iterations ?? "?") + " iterations", finals].filter(Boolean).join(" · ");
  const its = [...new Set(INDEX.episodes.it)].sort((a, b) => a - b);
  const fit = document.getElementById("f-it"); option(fit, "", "all"); its.forEach(i => option(fit, i, i));
  const fph = document.getElementById("f-phase"); option(fph, "", "all"); INDEX.phases.forEach((p, i) => option(fph, i, p));
  const train = INDEX.phases.indexOf("train"); if (train >= 0) fph.value = String(train);
  const fty = document.getElementById("f-type"); option(fty, "", "all"); INDEX.types.forEach((t, i) => option(fty, i, t || "(none)"));
  // A link may carry filters: index.html#it=3&phase=train&won=0&inv=1&type=pick&colour=gap&page=2
  const hash = new URLSearchParams(location.hash.slice(1));
  const named = {it: "f-it", won: "f-won", inv: "f-inv", colour: "f-colour"};
  for (const [key, id] of Object.entries(named)) if (hash.has(key)) document.getElementById(id).value = hash.get(key);
  if (hash.has("phase")) fph.value = hash.get("phase") === "all" ? "" : String(INDEX.phases.indexOf(hash.get("phase")));
  if (hash.has("type")) fty.value = String(INDEX.types.indexOf(hash.get("type")));
  if (hash.has("page")) state.page = Math.max(0, (+hash.get("page") || 1) - 1);
  for (const id of ["f-it", "f-phase", "f-won", "f-inv", "f-type"]) document.getElementById(id).onchange = () => { state.page = 0; render(); };
  document.getElementById("f-colour").onchange = () => render();
  document.getElementById("prev").onclick = () => { if (state.page > 0) { state.page--; render(); } };
  document.getElementById("next").onclick = () => { state.page++; render(); };
}
function filteredGroups() {
  const E = INDEX.episodes, v = id => document.getElementById(id).value;
  const it = v("f-it"), ph = v("f-phase"), won = v("f-won"), inv = v("f-inv"), ty = v("f-type");
  const groups = new Map();
  for (let i = 0; i < E.it.length; i++) {
    if (it !== "" && E.it[i] !== +it) continue;
    if (ph !== "" && E.phase[i] !== +ph) continue;
    if (won !== "" && E.won[i] !== +won) continue;
    if (inv === "1" && !E.invalid[i]) continue;
    if (inv === "0" && E.invalid[i]) continue;
    if (ty !== "" && E.type[i] !== +ty) continue;
    const key = E.chunk[i] + ":" + E.group[i];
    if (!groups.has(key)) groups.set(key, {chunk: E.chunk[i], group: E.group[i], rows: []});
    groups.get(key).rows.push(i);
  }
  return [...groups.values()];
}
function colour(value, mode) {
  // gate in (0,1): 0.5 is white; gap in nats: 0 is white, ±2 saturates. Green = the skill made the token likelier.
  // The intensity is the square root of the deviation, so the small gaps of a weak skill stay visible.
  let t = mode === "gate" ? (value - 0.5) * 2 : Math.max(-1, Math.min(1, value / 2));
  const [r, g, b] = t >= 0 ? [26, 152, 80] : [215, 48, 39]; t = Math.sqrt(Math.abs(t));
  const mix = (c) => Math.round(255 + (c - 255) * t);
  return "rgb(" + mix(r) + "," + mix(g) + "," + mix(b) + ")";
}
function tokens(sig, mode) {
  const box = el("div", {class: "tokens"});
  const values = sig.signals[mode] || sig.signals.gate || [];
  sig.tokens.forEach((tok, k) => {
    const title = Object.entries(sig.signals).map(([n, vals]) => n + " " + fmt(vals[k])).join(" · ");
    box.append(el("span", {class: "tok", "data-value": fmt(values[k]), title: title, style: "background:" + colour(values[k], mode)}, tok));
  });
  return box;
}
function episodeCard(e, mode) {
  const card = el("div", {class: "episode " + (e.won ? "won" : "lost"), "data-episode": e.id});
  card.append(el("div", null, el("span", {class: "badge " + (e.won ? "ok" : "bad")}, e.won ? "success" : "failure"),
    el("span", {class: "badge"}, "reward " + fmt(e.reward)), el("span", {class: "badge"}, "return " + fmt(e.ret)),
    el("span", {class: "badge" + (e.invalid ? " bad" : "")}, e.invalid + " invalid"),
    e.truncated ? el("span", {class: "badge"}, "truncated") : null, e.dropped ? el("span", {class: "badge bad"}, "dropped") : null,
    el("div", {class: "head"}, e.id + (e.type ? " · " + e.type : ""))));
  if (e.skill) {
    card.append(el("div", {class: "skill"}, el("b", null, "skill" + (e.skill.analyzer ? " (" + e.skill.analyzer + ")" : "")),
      e.skill.ok ? (e.skill.skill || "") : "(analysis failed: no skill)",
      e.skill.summary ? el("div", null, el("b", null, "summary"), e.skill.summary) : null));
  }
  for (const s of e.steps) {
    const step = el("div", {class: "step"});
    step.append(el("div", {class: "head"}, "step " + s.i + " · action ", el("code", null, s.act || "∅"), " · ",
      el("span", {class: "badge " + (s.valid ? "ok" : "bad")}, s.valid ? "valid" : "invalid"), " reward " + fmt(s.r)));
    step.append(el("pre", null, s.obs));
    if (s.img) step.append(el("img", {class: "frame", src: s.img, alt: "frame of step " + s.i}));
    step.append(el("pre", {class: "out", title: "raw model output"}, s.out));
    if (s.sig) step.append(el("div", {class: "head"}, "response tokens coloured by " + (mode === "gate" ? "the gate" : "teacher − student log-prob")), tokens(s.sig, mode));
    step.append(el("details", null, el("summary", null, "full prompt"), el("pre", null, s.prompt)));
    card.append(step);
  }
  return card;
}
async function render() {
  const groups = filteredGroups();
  const pages = Math.max(1, Math.ceil(groups.length / GROUPS_PER_PAGE));
  state.page = Math.min(state.page, pages - 1);
  const shown = groups.slice(state.page * GROUPS_PER_PAGE, (state.page + 1) * GROUPS_PER_PAGE);
  document.getElementById("page").textContent = " page " + (state.page + 1) + " / " + pages + " (" + groups.length + " groups) ";
  const mode = document.getElementById("f-colour").value;
  document.getElementById("legend-lo").textContent = mode === "gate" ? "gate 0" : "−2 nats";
  document.getElementById("legend-hi").textContent = mode === "gate" ? "1" : "+2";
  await Promise.all([...new Set(shown.map(g => g.chunk))].map(loadChunk));
  const main = document.getElementById("groups"); main.textContent = "";
  for (const g of shown) {
    const members = CHUNKS[g.chunk].filter(e => e.group === g.group);
    // a chunk holds consecutive index rows: row i is episode (i − the chunk's first row) of it
    const picked = g.rows.map(i => CHUNKS[g.chunk][i - FIRST_ROW[g.chunk]]);
    const e0 = picked[0];
    const box = el("section", {class: "group"}, el("h2", null, "iteration " + e0.it + " · " + e0.phase + " · group " + e0.group +
      " · " + (e0.task || "") + " — " + (e0.text || "") + " (" + picked.length + "/" + members.length + " episodes shown)"));
    const row = el("div", {class: "members"}); picked.forEach(e => row.append(episodeCard(e, mode)));
    box.append(row); main.append(box);
  }
  if (!shown.length) main.append(el("p", null, "No episode matches the filters."));
  const st = document.getElementById("status");
  const ms = Math.round(performance.now() - T0);
  st.textContent = INDEX.episodes.it.length + " episodes · drawn in " + ms + " ms";
  if (st.dataset.ready !== "1") { st.dataset.renderMs = ms; st.dataset.ready = "1"; }
}
const idx = document.createElement("script"); idx.src = "data/index.js";
idx.onload = () => { setup(); render(); };
idx.onerror = () => { document.getElementById("status").textContent = "data/index.js is missing: run `seedbench view RUN` again"; };
document.head.appendChild(idx);
</script></body></html>
"""
