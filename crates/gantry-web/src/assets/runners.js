// The control plane's pages (loaded before app.js, whose helpers they use
// when called): runners with their SDKs, models and load; agents and their
// threads; a thread's turns and items, live. The runners page follows every
// thread's stream (/v1/events, which also says when runners or agents
// change) and reads the API again after what it says, and whenever the
// stream (re)opens, since hints of runners are not replayed.
"use strict";

function cpNav() {
  const nav = document.querySelector("header nav");
  nav.replaceChildren(el("a", { href: "#/" }, "Runners"));
}

function yesNo(flag, yes, no) {
  return el("span", { class: "status " + (flag ? "idle" : "failed") }, flag ? yes : no);
}

async function runnersPage(signal) {
  main.replaceChildren(el("h1", {}, "Runners"));
  const runnersBody = el("tbody", { id: "runners" });
  const agentsList = el("section", { id: "agents", "aria-label": "Agents and their threads" });
  main.append(
    el("table", {},
      el("caption", { class: "sr-only" }, "Runners of this control plane"),
      el("thead", {}, el("tr", {}, el("th", {}, "Runner"), el("th", {}, "Connection"),
        el("th", { class: "hide-sm" }, "Protocol"), el("th", {}, "SDKs and models"),
        el("th", {}, "Load"))),
      runnersBody),
    el("h2", {}, "Agents"), agentsList);
  const refresh = async () => {
    const runners = await api("GET", "/v1/runners");
    runnersBody.replaceChildren(...runners.map((r) => el("tr", { "data-runner": r.name },
      el("td", {}, el("strong", {}, r.name), el("div", { class: "muted ws" }, r.id)),
      el("td", { class: "connection" }, r.connected
        ? yesNo(r.healthy, "connected", "connected, unhealthy")
        : yesNo(false, "", "not connected")),
      el("td", { class: "hide-sm" }, r.protocol + (r.protocol_pinned ? " (pinned)" : "")),
      el("td", {}, r.sdks.length ? el("ul", { class: "plain" }, ...r.sdks.map((s) => el("li", {},
        el("code", {}, s.name), s.status ? " (" + s.status + ")" : "", ": ",
        s.models.map((m) => m.name).join(", ") || "no models"))) : el("span", { class: "muted" }, "none yet")),
      el("td", {}, r.running_turns + " running turn" + (r.running_turns === 1 ? "" : "s") +
        " · " + r.agents + " agent" + (r.agents === 1 ? "" : "s")))));
    if (!runners.length) runnersBody.append(el("tr", {}, el("td", { colspan: 5, class: "muted" },
      "No runners yet: add one with gantry control-plane add-runner.")));
    const agents = await api("GET", "/v1/agents");
    const blocks = [];
    for (const a of agents) {
      const threads = await api("GET", `/v1/agents/${encodeURIComponent(a.id)}/threads`);
      blocks.push(el("article", { class: "item", "data-agent": a.id },
        el("h3", {}, "Agent ", el("code", {}, a.id)),
        el("div", { class: "muted" }, `runner ${a.runner_id} · ${a.sdk}` + (a.model ? " · " + a.model : "") + " · " + a.status),
        threads.length ? el("ul", { class: "plain" }, ...threads.map((t) => el("li", {},
          el("a", { href: "#/t/" + t.id }, t.name || t.id), " ",
          el("span", { class: "status " + t.status }, t.status), " ",
          el("span", { class: "muted" }, t.model + " · " + ago(t.updated_at)))))
          : el("div", { class: "muted" }, "No threads.")));
    }
    agentsList.replaceChildren(...blocks);
    if (!agents.length) agentsList.append(el("p", { class: "muted" }, "No agents yet."));
    setConn("live");
  };
  await refresh();
  // At most one read at a time, 100 ms after the first event that asks for
  // one (a busy control plane sends events faster than that).
  let timer = null, reading = false, again = false;
  const later = () => {
    if (reading) { again = true; return; }
    if (timer) return;
    timer = setTimeout(async () => {
      timer = null;
      reading = true;
      try { await refresh(); } catch (e) { setConn("reconnecting"); }
      reading = false;
      if (again && !signal.aborted) { again = false; later(); }
    }, 100);
  };
  signal.addEventListener("abort", () => clearTimeout(timer));
  // Items and usage change nothing this page shows.
  follow("/v1/events", (type) => { if (type !== "item" && type !== "usage") later(); }, signal, later);
}

function cpItem(item) {
  const node = el("article", { class: "item " + item.type, id: "item-" + item.id });
  node.append(el("div", { class: "who" }, item.type.replace(/_/g, " ") + " · " + item.status));
  if (item.command) {
    node.append(el("code", {}, "$ " + (item.command.command || "")),
      el("pre", { class: "text" }, item.command.output || ""));
    if (item.command.exit_code !== undefined && item.command.exit_code !== null)
      node.append(el("div", { class: "exit" + (item.command.exit_code ? " nonzero" : "") }, "exit code " + item.command.exit_code));
  } else {
    node.append(el("div", { class: "text" }, item.text || ""));
  }
  return node;
}

// A turn's end (or that it runs): "turn interrupted", "turn running", ...
function cpTurn(turn) {
  return el("div", { class: "turn-end", id: "turn-" + turn.id },
    el("span", { class: "status " + turn.status }, "turn " + turn.status));
}

async function cpThreadPage(id, signal) {
  const path = "/v1/threads/" + encodeURIComponent(id);
  const status = el("span", { class: "status", id: "thread-status", role: "status" });
  const items = el("section", { class: "items", id: "items", "aria-live": "polite", "aria-label": "Conversation" });
  const heading = el("div", { class: "muted" });
  const render = (t) => {
    status.textContent = t.status;
    status.className = "status " + t.status;
    heading.textContent = `${t.model} · agent ${t.agent_id} · runner ${t.runner_id}`;
    // Each turn's items, then how the turn stands (an interrupted one says so).
    const all = t.turns.flatMap((turn) => (turn.items || []).map(cpItem).concat(cpTurn(turn)))
      .concat((t.unattributed_items || []).map(cpItem));
    items.replaceChildren(...all);
  };
  const act = (method, sub, body) => async () => {
    try { await api(method, path + sub, body); } catch (e) { alert(e.message); }
  };
  const remove = async () => {
    if (!confirm("Delete this thread on its runner?")) return;
    try { await api("DELETE", path); location.hash = "#/"; } catch (e) { alert(e.message); }
  };
  main.replaceChildren(
    el("h1", {}, "Thread ", el("code", {}, id)),
    el("div", { class: "toolbar" }, status, heading,
      el("button", { class: "danger", id: "interrupt", onclick: act("POST", "/interrupt", {}) }, "Interrupt"),
      el("button", { class: "danger", id: "delete", onclick: remove }, "Delete")),
    items);
  const text = el("textarea", { id: "message", required: true, placeholder: "Message the agent" });
  const form = el("form", { class: "composer", "aria-label": "Send a message" },
    el("div", {}, el("label", { for: "message" }, "Message"), text),
    el("button", { type: "submit", id: "send" }, "Send"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!text.value.trim()) return;
    try { await api("POST", path + "/messages", { text: text.value }); text.value = ""; }
    catch (err) { alert(err.message); }
  });
  main.append(form);
  render(await api("GET", path));
  let pending = null;
  follow(path + "/events", () => {
    clearTimeout(pending);
    pending = setTimeout(async () => {
      try { render(await api("GET", path)); } catch (e) { /* the stream says when it is back */ }
    }, 100);
  }, signal);
}

async function cpRoute(hash, signal) {
  cpNav();
  if (hash.startsWith("#/t/")) await cpThreadPage(decodeURIComponent(hash.slice(4)), signal);
  else await runnersPage(signal);
}
