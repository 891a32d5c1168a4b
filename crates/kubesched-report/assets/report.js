// kubesched report: the page's only script (inlined by the template). It reads the
// model from #report-data and draws the node and pod lists (virtualised: only the rows
// in view exist, so 5,000 nodes stay responsive) and a pod's heat map on demand. Every
// name goes into the page as text (textContent), never as markup.
// The URL fragment opens a view: #tab=nodes, #pod=NAMESPACE/NAME&run=N.
"use strict";
(function () {
  const R = JSON.parse(document.getElementById("report-data").textContent);
  const $ = (id) => document.getElementById(id);
  let run = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  const cores = (m) => (m % 1000 === 0 ? String(m / 1000) : (m / 1000).toFixed(2).replace(/0+$/, ""));
  const gib = (b) => { if (b === 0) return "0"; const g = b / 1073741824; return (g >= 100 ? g.toFixed(0) : g.toFixed(1)) + "Gi"; };

  // ---- tabs and routing -------------------------------------------------------
  function showTab(name) {
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("on", b.dataset.tab === name);
    for (const s of document.querySelectorAll(".tab")) s.classList.toggle("on", s.id === "tab-" + name);
    if (name === "nodes") nodeList.refresh();
    if (name === "pods") podList.refresh();
  }
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));

  // ---- a virtual list: fixed-height rows, only those in view are in the DOM ----
  function VirtualList(container, rowHeight, render) {
    const spacer = el("div");
    container.appendChild(spacer);
    let items = [];
    let drawn = new Map();
    function draw() {
      const top = container.scrollTop, h = container.clientHeight || 600;
      const first = Math.max(0, Math.floor(top / rowHeight) - 5);
      const last = Math.min(items.length, Math.ceil((top + h) / rowHeight) + 5);
      const keep = new Map();
      for (let i = first; i < last; i++) {
        let row = drawn.get(i);
        if (!row) {
          row = render(items[i], i);
          row.style.top = i * rowHeight + "px";
          spacer.appendChild(row);
        }
        keep.set(i, row);
      }
      for (const [i, row] of drawn) if (!keep.has(i)) row.remove();
      drawn = keep;
    }
    container.addEventListener("scroll", () => requestAnimationFrame(draw));
    return {
      set(list) {
        items = list;
        for (const row of drawn.values()) row.remove();
        drawn = new Map();
        spacer.style.height = items.length * rowHeight + "px";
        draw();
      },
      refresh: draw,
      scrollTo(i) { container.scrollTop = Math.max(0, i * rowHeight - container.clientHeight / 2); draw(); },
    };
  }

  // ---- bars -------------------------------------------------------------------
  function bar(before, after, alloc, show) {
    const wrap = el("div", "cell-bar");
    const b = el("div", "bar");
    const pct = (v) => (alloc > 0 ? Math.min(100, Math.max(0, (v * 100) / alloc)) : 0);
    const seg = (cls, w) => { const i = el("i", cls); i.style.width = w.toFixed(2) + "%"; b.appendChild(i); };
    seg("b", pct(Math.min(before, after)));
    if (after >= before) seg("a", pct(after) - pct(before));
    else seg("r", pct(before) - pct(after));
    const text = show(before) + " → " + show(after) + " / " + show(alloc);
    b.title = text;
    wrap.appendChild(b);
    wrap.appendChild(el("small", "", alloc > 0 ? text : "nothing allocatable"));
    return wrap;
  }

  // ---- nodes ------------------------------------------------------------------
  const zoneName = (z) => R.zones[z] || "(no zone)";
  const zoneSel = $("node-zone");
  R.zones.forEach((z, i) => { const o = el("option", "", zoneName(i)); o.value = String(i); zoneSel.appendChild(o); });
  const nodeList = VirtualList($("node-list"), 31, (item) => {
    if (item.zone !== undefined) {
      const row = el("div", "row zonehead");
      row.appendChild(el("span", "", zoneName(item.zone)));
      row.appendChild(el("small", "", item.count + " node(s) · cpu " + cores(item.after.cpu) + " / " + cores(item.alloc.cpu) +
        " · memory " + gib(item.after.mem) + " / " + gib(item.alloc.mem) + " · pods " + item.after.pods + " / " + item.alloc.pods));
      return row;
    }
    const n = R.nodes[item.node], a = R.runs[run].after[item.node];
    const row = el("div", "row nodes-grid");
    row.dataset.node = n.name;
    row.appendChild(el("span", "", n.name)).title = n.name + " (" + zoneName(n.zone) + ")";
    const taints = el("span");
    if (n.unschedulable) taints.appendChild(el("span", "chip off", "unschedulable"));
    for (const t of n.taints) taints.appendChild(el("span", "chip", t));
    taints.title = n.taints.join("\n");
    row.appendChild(taints);
    row.appendChild(bar(n.before.cpu, a.cpu, n.alloc.cpu, cores));
    row.appendChild(bar(n.before.mem, a.mem, n.alloc.mem, gib));
    row.appendChild(bar(n.before.pods, a.pods, n.alloc.pods, String));
    return row;
  });
  function drawNodes() {
    const q = $("node-search").value.trim().toLowerCase();
    const zone = zoneSel.value, sort = $("node-sort").value, group = $("node-group").checked;
    const after = R.runs[run].after;
    let idx = [];
    R.nodes.forEach((n, i) => {
      if (zone !== "" && String(n.zone) !== zone) return;
      if (q && !(n.name.toLowerCase().includes(q) || n.taints.some((t) => t.toLowerCase().includes(q)))) return;
      idx.push(i);
    });
    const util = (i, k) => (R.nodes[i].alloc[k] > 0 ? after[i][k] / R.nodes[i].alloc[k] : 0);
    if (sort === "cpu") idx.sort((x, y) => util(y, "cpu") - util(x, "cpu") || x - y);
    if (sort === "mem") idx.sort((x, y) => util(y, "mem") - util(x, "mem") || x - y);
    if (sort === "added") idx.sort((x, y) => (after[y].pods - R.nodes[y].before.pods) - (after[x].pods - R.nodes[x].before.pods) || x - y);
    let items;
    if (group) {
      const byZone = R.zones.map(() => []);
      for (const i of idx) byZone[R.nodes[i].zone].push(i);
      items = [];
      byZone.forEach((nodes, z) => {
        if (!nodes.length) return;
        const sum = (f) => nodes.reduce((s, i) => { const u = f(i); return { cpu: s.cpu + u.cpu, mem: s.mem + u.mem, pods: s.pods + u.pods }; }, { cpu: 0, mem: 0, pods: 0 });
        items.push({ zone: z, count: nodes.length, alloc: sum((i) => R.nodes[i].alloc), after: sum((i) => after[i]) });
        for (const i of nodes) items.push({ node: i });
      });
    } else items = idx.map((i) => ({ node: i }));
    $("node-count").textContent = idx.length + " of " + R.nodes.length + " nodes";
    nodeList.set(items);
  }
  for (const id of ["node-search", "node-zone", "node-sort", "node-group"]) $(id).addEventListener("input", drawNodes);

  // ---- pods -------------------------------------------------------------------
  const nsSel = $("pod-ns"), schedSel = $("pod-scheduler");
  function options(sel, values) {
    for (const v of [...new Set(values)].sort()) { const o = el("option", "", v); o.value = v; sel.appendChild(o); }
  }
  options(nsSel, R.runs.flatMap((r) => r.attempts.map((a) => a.ns)));
  options(schedSel, R.runs.flatMap((r) => r.attempts.map((a) => a.scheduler)));
  let selected = null;
  function where(a) {
    switch (a.outcome) {
      case "scheduled": return a.node;
      case "nominated": return "nominated " + a.nominated + ", evicting " + a.victims.join(", ") + " · " + a.message;
      case "gated": return "scheduling gates: " + a.gates.join(", ");
      case "ignored": return "no profile named " + a.scheduler;
      default: return a.message;
    }
  }
  const podList = VirtualList($("pod-list"), 31, (i) => {
    const a = R.runs[run].attempts[i];
    const row = el("div", "row pods-grid pod" + (selected === i ? " sel" : ""));
    row.dataset.pod = a.pod;
    row.dataset.i = String(i);
    row.appendChild(el("span", "", a.pod + (a.nth > 1 ? " (attempt " + a.nth + ")" : ""))).title = a.pod;
    row.appendChild(el("span", "", a.scheduler));
    const w = el("span");
    w.appendChild(el("span", "badge " + a.outcome, a.outcome));
    w.appendChild(document.createTextNode(where(a) || ""));
    w.title = where(a) || "";
    row.appendChild(w);
    row.addEventListener("click", () => openAttempt(i));
    return row;
  });
  let podItems = [];
  function drawPods() {
    const q = $("pod-search").value.trim().toLowerCase();
    const ns = nsSel.value, sched = schedSel.value, outcome = $("pod-outcome").value;
    podItems = [];
    R.runs[run].attempts.forEach((a, i) => {
      if (ns && a.ns !== ns) return;
      if (sched && a.scheduler !== sched) return;
      if (outcome && a.outcome !== outcome) return;
      if (q && !(a.pod.toLowerCase().includes(q) || (where(a) || "").toLowerCase().includes(q))) return;
      podItems.push(i);
    });
    $("pod-count").textContent = podItems.length + " of " + R.runs[run].attempts.length + " attempts";
    podList.set(podItems);
  }
  for (const id of ["pod-search", "pod-ns", "pod-scheduler", "pod-outcome"]) $(id).addEventListener("input", drawPods);

  // ---- one pod: facts and heat map ---------------------------------------------
  const HEAT_ROWS = 200;
  function heat(v, lo, hi) {
    if (hi <= lo) return "";
    const t = (v - lo) / (hi - lo);
    return "hsl(" + (8 + t * 130).toFixed(0) + ", 70%, " + (92 - t * 22).toFixed(0) + "%)";
  }
  function openAttempt(i) {
    selected = i;
    podList.refresh();
    for (const r of document.querySelectorAll("#pod-list .row")) r.classList.toggle("sel", r.dataset.i === String(i));
    const a = R.runs[run].attempts[i];
    history.replaceState(null, "", "#pod=" + encodeURIComponent(a.pod) + "&run=" + run + (a.nth > 1 ? "&nth=" + a.nth : ""));
    const box = $("pod-detail");
    box.replaceChildren();
    box.appendChild(el("h3", "", a.pod));
    const facts = el("div", "facts");
    const fact = (k, v) => { const d = el("div"); d.appendChild(el("b", "", k + ": ")); d.appendChild(document.createTextNode(v)); facts.appendChild(d); };
    fact("configuration", R.runs[run].name);
    fact("scheduler", a.scheduler);
    fact("outcome", a.outcome + (a.node ? " on " + a.node : "") + (a.nth > 1 ? " (attempt " + a.nth + ")" : ""));
    fact("requests", "cpu " + cores(a.req.cpu) + ", memory " + gib(a.req.mem) + ", priority " + a.priority);
    if (a.nominated) fact("preemption", "nominated " + a.nominated + "; victims " + a.victims.join(", "));
    if (a.gates.length) fact("scheduling gates", a.gates.join(", "));
    box.appendChild(facts);
    if (a.message) box.appendChild(el("div", "message", a.message));
    if (a.candidates.length) {
      box.appendChild(el("h4", "", "Preemption candidates, in node order"));
      const list = el("ul", "candidates");
      for (const c of a.candidates) {
        const li = el("li", c.node === a.nominated ? "nominated" : "");
        li.appendChild(el("b", "", c.node + (c.node === a.nominated ? " (nominated)" : "")));
        li.appendChild(document.createTextNode(": evict " + c.victims.join(", ") + " (" + c.details + ")"));
        list.appendChild(li);
      }
      box.appendChild(list);
      if (a.why) box.appendChild(el("p", "note", a.nominated + " won: " + a.why));
    }
    if (a.detail === null || a.detail === undefined) {
      if (a.outcome !== "gated" && a.outcome !== "ignored")
        box.appendChild(el("p", "note", "This attempt's per-node detail is over the report's budget: rerun with --detail-pod " + a.pod + " to keep it."));
      return;
    }
    const d = R.runs[run].details[a.detail];
    const rejectedCount = d.rejected.reduce((s, g) => s + g.nodes.length, 0);
    box.appendChild(el("p", "note", d.scored.length + " feasible node(s), " + rejectedCount + " rejected" +
      (d.ties.length ? "; " + d.ties.length + " nodes share the best total: the first in node order wins (kube-scheduler picks one at random)" : "")));
    if (d.rejected.length) {
      const rj = el("div", "rejects");
      for (const g of d.rejected) {
        const line = el("div");
        line.appendChild(el("b", "", g.plugin));
        line.appendChild(document.createTextNode(" rejected " + g.nodes.length + " node(s): " + g.reasons.join("; ") + " — "));
        const names = g.nodes.slice(0, 5).map((n) => R.nodes[n].name).join(", ") + (g.nodes.length > 5 ? ", …" : "");
        line.appendChild(el("small", "", names));
        rj.appendChild(line);
      }
      box.appendChild(rj);
    }
    // Feasible nodes by total (ties in node order, as the winner is picked), then the rejected.
    const rows = d.scored.map((s, k) => ({ s, k })).sort((x, y) => y.s[2] - x.s[2] || x.s[0] - y.s[0]);
    // A single feasible node is taken without scoring.
    const unscored = d.winner !== null && !d.scored.some((s) => s[0] === d.winner);
    const rejectedRows = [];
    for (const g of d.rejected) for (const n of g.nodes) rejectedRows.push({ n, g });
    rejectedRows.sort((x, y) => x.n - y.n);
    const lo = d.plugins.map((_, c) => Math.min(...d.scored.map((s) => s[1][c])));
    const hi = d.plugins.map((_, c) => Math.max(...d.scored.map((s) => s[1][c])));
    const tlo = Math.min(...d.scored.map((s) => s[2])), thi = Math.max(...d.scored.map((s) => s[2]));
    const table = el("table", "heat");
    const head = el("tr");
    head.appendChild(el("th", "", "node"));
    // Plugin names break between their words (NodeResources|Fit).
    for (const p of d.plugins) head.appendChild(el("th", "plugin", p.replace(/([a-z])([A-Z])/g, "$1\u200b$2"))).title = p + " (weighted score)";
    head.appendChild(el("th", "", "total"));
    head.appendChild(el("th", "", ""));
    table.appendChild(el("thead")).appendChild(head);
    const body = el("tbody");
    table.appendChild(body);
    const ties = new Set(d.ties);
    if (unscored) {
      const tr = el("tr", "winner");
      tr.appendChild(el("td", "node", R.nodes[d.winner].name));
      const td = el("td", "mark", "the only feasible node: taken without scoring");
      td.colSpan = d.plugins.length + 2;
      tr.appendChild(td);
      tr.appendChild(el("td", "mark", "winner"));
      body.appendChild(tr);
    }
    const all = rows.length + rejectedRows.length;
    let shown = 0;
    function more(limit) {
      const end = Math.min(all, limit);
      for (; shown < end; shown++) {
        const tr = el("tr");
        if (shown < rows.length) {
          const s = rows[shown].s;
          if (s[0] === d.winner) tr.className = "winner";
          tr.appendChild(el("td", "node", R.nodes[s[0]].name)).title = R.nodes[s[0]].name;
          s[1].forEach((v, c) => { const td = el("td", "", v); td.style.background = heat(v, lo[c], hi[c]); tr.appendChild(td); });
          const t = el("td", "total", s[2]); t.style.background = heat(s[2], tlo, thi); tr.appendChild(t);
          tr.appendChild(el("td", "mark", s[0] === d.winner ? "winner" + (ties.size ? " (first in node order)" : "") : ties.has(s[0]) ? "tie: later in node order" : ""));
        } else {
          const r = rejectedRows[shown - rows.length];
          tr.className = "rejected";
          tr.appendChild(el("td", "node", R.nodes[r.n].name)).title = R.nodes[r.n].name;
          const why = el("td", "why", r.g.plugin + ": " + r.g.reasons.join("; "));
          why.colSpan = d.plugins.length + 2;
          tr.appendChild(why);
        }
        body.appendChild(tr);
      }
      button.style.display = shown < all ? "" : "none";
      button.textContent = "show all " + all + " nodes (" + (all - shown) + " more)";
    }
    const button = el("button", "more");
    button.addEventListener("click", () => more(all));
    box.appendChild(table);
    box.appendChild(button);
    more(HEAT_ROWS);
    box.dataset.open = a.pod;
  }
  function openPod(key, nth) {
    const i = R.runs[run].attempts.findIndex((a) => a.pod === key && (!nth || a.nth === nth));
    if (i < 0) return false;
    showTab("pods");
    const at = podItems.indexOf(i);
    if (at >= 0) podList.scrollTo(at);
    openAttempt(i);
    return true;
  }
  for (const link of document.querySelectorAll("a[data-pod]"))
    link.addEventListener("click", (e) => { e.preventDefault(); openPod(link.dataset.pod); });

  // ---- configuration picker, first draw, fragment -----------------------------------
  $("run").addEventListener("input", () => {
    run = Number($("run").value);
    selected = null;
    drawNodes();
    drawPods();
    $("pod-detail").replaceChildren(el("p", "note", "Open a pod to see every node's verdict."));
  });
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has("run") && R.runs[Number(params.get("run"))]) { run = Number(params.get("run")); $("run").value = String(run); }
  drawNodes();
  drawPods();
  if (params.has("tab")) showTab(params.get("tab"));
  if (params.has("pod")) openPod(params.get("pod"), Number(params.get("nth")) || 0);
  const ms = Math.round(performance.now());
  document.body.dataset.loadMs = String(ms);
  $("timing").textContent = "· page ready " + ms + " ms after navigation";
})();
