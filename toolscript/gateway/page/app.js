// The gateway's page.  Every text shown comes from memories, servers and tools, which anyone
// may have written: it goes into the page as text (text nodes, textContent; no HTML parsing), and the
// Content-Security-Policy allows no inline script.  The session cookie is HttpOnly: this
// script never sees a secret.
"use strict";

const api = {
  async get(path, params) {
    const query = params ? "?" + new URLSearchParams(params).toString() : "";
    const response = await fetch("api/" + path + query, { credentials: "same-origin", headers: { Accept: "application/json" } });
    return answer(response);
  },
  async post(path, payload) {
    const response = await fetch("api/" + path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(payload),
    });
    return answer(response);
  },
};

async function answer(response) {
  let payload = null;
  try {
    payload = await response.json();
  } catch (err) {
    payload = null;
  }
  if (!response.ok) {
    const message = payload && typeof payload.error === "string" ? payload.error : "HTTP " + response.status;
    throw new Error(message);
  }
  return payload;
}

// el("li", {className: "x", dataset: {id: 3}}, "text", childNode): strings become text nodes.
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "dataset") {
      for (const [name, v] of Object.entries(value)) node.dataset[name] = String(v);
    } else if (key === "className") {
      node.className = value;
    } else {
      node.setAttribute(key, String(value));
    }
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function status(text, bad) {
  const node = document.getElementById("status");
  node.textContent = text || "";
  node.className = bad ? "bad" : "muted";
}

function when(epochSeconds) {
  return new Date(epochSeconds * 1000).toLocaleString();
}

function day(epochSeconds) {
  return new Date(epochSeconds * 1000).toLocaleDateString(undefined, { weekday: "short", year: "numeric", month: "short", day: "numeric" });
}

// -- memories ------------------------------------------------------------------------

const memoryState = { project: "", query: "" };

async function loadOverview() {
  const overview = await api.get("overview");
  document.getElementById("session").textContent =
    "session " + overview.session + " · " + overview.tools + " tools · v" + overview.version;
  const select = document.getElementById("project");
  clear(select);
  select.append(el("option", { value: "" }, "All projects"));
  const known = new Set();
  for (const item of overview.projects) {
    known.add(item.project);
    select.append(el("option", { value: item.project }, item.project + " (" + item.memories + ")"));
  }
  if (!known.has(overview.project)) select.append(el("option", { value: overview.project }, overview.project + " (0)"));
  select.value = overview.project;
  memoryState.project = overview.project;
  if (overview.memoryError) status("memory: " + overview.memoryError, true);
}

async function loadMemories() {
  const params = { project: memoryState.project };
  if (memoryState.query) params.q = memoryState.query;
  const answer = await api.get("memories", params);
  const list = document.getElementById("timeline");
  clear(list);
  const note = document.getElementById("memory-note");
  const count = answer.memories.length;
  if (answer.note) note.textContent = answer.note;
  else if (memoryState.query) note.textContent = count + (count === 1 ? " memory matches" : " memories match") + " \u201c" + memoryState.query + "\u201d, best first";
  else note.textContent = count ? "Newest first" : "No memories in this project yet";
  let lastDay = "";
  for (const memory of answer.memories) {
    const thisDay = day(memory.created);
    if (!memoryState.query && thisDay !== lastDay) {
      list.append(el("li", { className: "day" }, thisDay));
      lastDay = thisDay;
    }
    list.append(memoryItem(memory));
  }
}

function memoryItem(memory) {
  // Where it came from: a file and line for an imported entry, else the tool that made it.
  const source = [memory.kind, memory.source || memory.tool].filter(Boolean).join(" · ");
  const meta = el("div", { className: "meta" },
    el("span", {}, when(memory.created)),
    el("span", {}, source),
    memory.session ? el("span", {}, "session " + memory.session.slice(0, 8)) : null,
    el("span", {}, "#" + memory.id),
    memory.score !== undefined ? el("span", {}, "score " + memory.score) : null);
  const details = el("div", { className: "details" },
    el("div", {}, "Project: " + memory.project),
    el("div", {}, "Session: " + (memory.session || "none")),
    memory.files.length ? el("div", {}, "Files: " + memory.files.join(", ")) : null);
  const toggle = el("button", { type: "button", className: "more" }, "Full text");
  const forget = el("button", { type: "button", className: "forget" }, "Forget");
  const item = el("li", { className: "memory kind-" + memory.kind, dataset: { id: memory.id } },
    meta, el("div", { className: "content" }, memory.content), details, el("div", { className: "actions" }, toggle, forget));
  toggle.addEventListener("click", () => {
    item.classList.toggle("open");
    toggle.textContent = item.classList.contains("open") ? "Less" : "Full text";
  });
  forget.addEventListener("click", async () => {
    if (!forget.classList.contains("confirm")) {
      forget.classList.add("confirm");
      forget.textContent = "Forget for good?";
      return;
    }
    forget.disabled = true;
    try {
      await api.post("forget", { id: memory.id });
      item.remove();
      status("Forgot memory #" + memory.id);
    } catch (err) {
      forget.disabled = false;
      status("Could not forget #" + memory.id + ": " + err.message, true);
    }
  });
  return item;
}

// -- servers, tools, calls -------------------------------------------------------------

async function loadServers() {
  const answer = await api.get("servers");
  const rows = document.getElementById("server-rows");
  clear(rows);
  for (const server of answer.servers) {
    rows.append(el("tr", {},
      el("td", {}, server.name),
      el("td", { className: "state-" + server.state }, server.state),
      el("td", {}, server.transport || ""),
      el("td", {}, String(server.tools)),
      el("td", {}, server.source || (server.transport === "builtin" ? "built in" : "")),
      el("td", {}, server.error || "")));
  }
}

async function loadTools(query) {
  const answer = await api.get("tools", query ? { q: query } : null);
  const list = document.getElementById("tool-list");
  clear(list);
  document.getElementById("tool-count").textContent = query
    ? answer.tools.length + " of " + answer.total + " tools match"
    : answer.total + " tools";
  for (const tool of answer.tools) {
    const item = el("li", { dataset: { id: tool.id } }, el("div", { className: "id" }, tool.id), el("div", { className: "desc" }, tool.description));
    item.addEventListener("click", () => {
      for (const other of list.querySelectorAll("li.selected")) other.classList.remove("selected");
      item.classList.add("selected");
      showStub(tool.id).catch((err) => status(err.message, true));
    });
    list.append(item);
  }
}

async function showStub(id) {
  const stub = await api.get("stub", { id: id });
  document.getElementById("stub-title").textContent = stub.id;
  document.getElementById("stub-code").textContent = stub.code + (stub.usage ? "\n\n# usage\n" + stub.usage : "");
}

async function loadCalls() {
  const answer = await api.get("calls");
  const rows = document.getElementById("call-rows");
  clear(rows);
  for (const call of answer.calls) {
    rows.append(el("tr", {},
      el("td", {}, when(call.at)),
      el("td", {}, call.tool),
      el("td", {}, call.source),
      el("td", { className: call.ok ? "ok" : "bad" }, call.ok ? "ok" : call.error || "failed"),
      el("td", {}, call.durationMs + " ms")));
  }
  document.getElementById("calls-note").textContent = answer.calls.length ? "" : "No tool calls through this gateway yet";
}

// -- wiring ----------------------------------------------------------------------------

const loaders = { memories: loadMemories, servers: loadServers, tools: () => loadTools(document.getElementById("tool-query").value.trim()), calls: loadCalls };

function show(tab) {
  for (const button of document.querySelectorAll(".tab")) button.setAttribute("aria-selected", String(button.dataset.tab === tab));
  for (const panel of document.querySelectorAll(".panel")) panel.hidden = panel.id !== tab;
  run(loaders[tab]);
}

function run(action) {
  return Promise.resolve()
    .then(action)
    .then(() => document.body.setAttribute("data-ready", "1"))
    .catch((err) => status(err.message, true));
}

function start() {
  for (const button of document.querySelectorAll(".tab")) button.addEventListener("click", () => show(button.dataset.tab));
  document.getElementById("project").addEventListener("change", (event) => {
    memoryState.project = event.target.value;
    run(loadMemories);
  });
  document.getElementById("memory-search").addEventListener("submit", (event) => {
    event.preventDefault();
    memoryState.query = document.getElementById("memory-query").value.trim();
    run(loadMemories);
  });
  document.getElementById("tool-search").addEventListener("submit", (event) => {
    event.preventDefault();
    run(loaders.tools);
  });
  run(() => loadOverview().then(loadMemories));
}

start();
