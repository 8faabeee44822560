// Gantry's dashboard: plain JavaScript over the HTTP API v1, no build step.
// Event streams are read with fetch (so the bearer token and Last-Event-ID
// are sent by us) and reconnect by themselves, showing "reconnecting".
"use strict";

const main = document.getElementById("main");
const conn = document.getElementById("conn");
let token = localStorage.getItem("gantry.token") || "";
let pageStop = null; // stops the current page's streams

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== false && v !== null && v !== undefined) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

async function api(method, path, body) {
  const headers = {};
  if (token) headers.authorization = "Bearer " + token;
  if (body !== undefined) headers["content-type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (resp.status === 401) askToken();
  const text = await resp.text();
  const data = text ? JSON.parse(text) : null;
  if (!resp.ok) {
    const err = new Error((data && data.error && data.error.message) || resp.statusText);
    err.details = (data && data.error && data.error.details) || {};
    throw err;
  }
  return data;
}

function askToken() {
  document.getElementById("token-box").hidden = false;
  document.getElementById("token-input").focus();
}
document.getElementById("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  token = document.getElementById("token-input").value.trim();
  localStorage.setItem("gantry.token", token);
  document.getElementById("token-box").hidden = true;
  route();
});

function setConn(state) {
  conn.textContent = state === "live" ? "● live" : state === "reconnecting" ? "reconnecting…" : "";
  conn.className = "conn " + state;
}

// Follows an SSE route; calls onEvent(type, data, id), and onOpen (if
// given) each time the stream opens. Reconnects with Last-Event-ID after
// any drop (a server restart included).
function follow(path, onEvent, signal, onOpen) {
  let lastId = null;
  (async () => {
    let delay = 500;
    while (!signal.aborted) {
      try {
        const headers = { accept: "text/event-stream" };
        if (token) headers.authorization = "Bearer " + token;
        if (lastId) headers["last-event-id"] = lastId;
        const resp = await fetch(path, { headers, signal });
        if (resp.status === 401) { askToken(); return; }
        if (resp.status === 404) { onEvent("gone", {}, null); return; }
        if (!resp.ok) throw new Error(resp.statusText);
        setConn("live");
        if (onOpen) onOpen();
        delay = 500;
        const reader = resp.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            let type = "message", data = "", id = null;
            for (const line of block.split("\n")) {
              if (line.startsWith("event:")) type = line.slice(6).trim();
              else if (line.startsWith("data:")) data += line.slice(5).trimStart();
              else if (line.startsWith("id:")) id = line.slice(3).trim();
            }
            if (!data) continue; // a keep-alive comment
            if (id) lastId = id;
            onEvent(type, JSON.parse(data), id);
          }
        }
      } catch (e) {
        if (signal.aborted) return;
      }
      setConn("reconnecting");
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5000);
    }
  })();
  return (id) => { if (id !== undefined) lastId = id; };
}

function ago(ms) {
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 60) return s + "s ago";
  if (s < 3600) return Math.round(s / 60) + "m ago";
  if (s < 86400) return Math.round(s / 3600) + "h ago";
  return new Date(ms).toLocaleDateString();
}

// ---- Threads list ----
async function threadsPage(signal) {
  main.replaceChildren(el("h1", {}, "Threads"));
  const form = el("form", { class: "toolbar", "aria-label": "New thread" },
    el("label", { for: "new-ws" }, "Workspace"),
    el("input", { id: "new-ws", placeholder: "server default", size: 30 }),
    el("button", { type: "submit" }, "New thread"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const ws = document.getElementById("new-ws").value.trim();
    try {
      const t = await api("POST", "/v1/threads", ws ? { workspace: ws } : {});
      location.hash = "#/t/" + t.id;
    } catch (err) { alert(err.message); }
  });
  const body = el("tbody", { id: "threads" });
  main.append(form, el("table", {},
    el("caption", { class: "sr-only" }, "Threads, newest first"),
    el("thead", {}, el("tr", {}, el("th", {}, "Thread"), el("th", {}, "Status"),
      el("th", { class: "hide-sm" }, "Model"), el("th", { class: "hide-sm" }, "Workspace"),
      el("th", {}, "Cost"), el("th", {}, "Last activity"))),
    body));
  let pending = null;
  const refresh = async () => {
    const list = await api("GET", "/v1/threads?limit=100");
    body.replaceChildren(...list.threads.map((t) => el("tr", { "data-id": t.id },
      el("td", {}, el("a", { href: "#/t/" + t.id }, t.name || t.preview || t.id)),
      el("td", { class: "status " + t.status }, t.paused ? t.status + " (paused)" : t.status),
      el("td", { class: "hide-sm" }, t.model),
      el("td", { class: "ws hide-sm" }, t.workspace),
      el("td", {}, "$" + t.cost_usd.toFixed(4)),
      el("td", {}, ago(t.updated_at)))));
    if (!list.threads.length) body.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No threads yet.")));
  };
  await refresh();
  follow("/v1/events", (type) => {
    if (type === "delta") return;
    clearTimeout(pending);
    pending = setTimeout(refresh, 150);
  }, signal);
}

// ---- Thread page ----
function renderItem(item, threadId) {
  const node = el("article", { class: "item " + item.type, id: "item-" + item.id });
  const who = { user_message: "You", agent_message: "Agent", reasoning: "Reasoning",
    command_execution: "Command", file_change: "File change", tool_call: "Tool",
    approval: "Approval", user_input: "Question", error: "Error" }[item.type] || item.type;
  node.append(el("div", { class: "who" }, who));
  switch (item.type) {
    case "user_message":
    case "agent_message":
      node.append(el("div", { class: "text" }, item.text || ""));
      break;
    case "reasoning":
      node.append(el("details", {}, el("summary", {}, "Thinking"), el("div", { class: "text" }, item.text || "")));
      break;
    case "command_execution": {
      node.append(el("code", {}, "$ " + item.command), el("pre", { class: "text", "aria-label": "Output" }, item.output || ""));
      if (item.exit_code !== undefined && item.exit_code !== null)
        node.append(el("div", { class: "exit" + (item.exit_code ? " nonzero" : "") }, "exit code " + item.exit_code));
      break;
    }
    case "file_change": {
      const pre = el("pre", { class: "diff" });
      for (const line of (item.diff || "").split("\n")) {
        pre.append(el("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "" }, line + "\n"));
      }
      node.append(el("code", {}, item.path), pre);
      break;
    }
    case "tool_call":
      node.append(el("code", {}, item.name), el("pre", {}, item.error || item.result || JSON.stringify(item.arguments)));
      break;
    case "approval": {
      const req = item.request || {};
      node.append(el("div", {}, (req.tool || "") + " ", el("code", {}, JSON.stringify(req.arguments || req.command || req))));
      if (item.status === "in_progress") node.append(approvalButtons(threadId, item.approval_id));
      else node.append(el("div", { class: "muted" }, "answered: " + JSON.stringify(item.decision || "")));
      break;
    }
    case "user_input":
      node.append(item.status === "in_progress" ? userInputForm(threadId, item) : userInputAnswered(item));
      break;
    default:
      node.append(el("pre", {}, item.message || item.text || JSON.stringify(item)));
  }
  return node;
}

// The model's questions as a form: a radio button per option (a checkbox
// when several may be picked), a text box where a typed answer is taken.
// Sending it answers the request; "Skip" answers nothing (the model hears
// the user declined).
function userInputForm(threadId, item) {
  const questions = item.questions || [];
  const form = el("form", { class: "user-input", "aria-label": "Answer the agent's questions" });
  const fieldName = (i) => `q-${item.request_id}-${i}`;
  questions.forEach((q, i) => {
    const name = fieldName(i);
    const set = el("fieldset", { "data-question": q.id }, el("legend", {}, q.header), el("p", {}, q.question));
    (q.options || []).forEach((o, j) => {
      const id = `${name}-${j}`;
      set.append(el("div", { class: "option" },
        el("input", { type: q.multi_select ? "checkbox" : "radio", name, id, value: o.label }),
        el("label", { for: id }, o.label),
        o.description ? el("span", { class: "muted" }, " — " + o.description) : null));
    });
    if (q.allow_free_text || !(q.options || []).length) {
      const id = `${name}-text`;
      set.append(el("div", { class: "option" },
        el("label", { for: id }, (q.options || []).length ? "Other: " : "Your answer: "),
        el("input", { type: "text", id, "data-free-text": q.id, maxlength: 4000, size: 40 })));
    }
    form.append(set);
  });
  const send = async (answers) => {
    try {
      await api("POST", `/v1/threads/${threadId}/user-input/${item.request_id}`, { answers });
    } catch (err) { alert(err.message); }
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const answers = questions.map((q, i) => {
      const selected = [...form.querySelectorAll("input:checked")]
        .filter((input) => input.name === fieldName(i)).map((input) => input.value);
      const box = document.getElementById(`${fieldName(i)}-text`);
      const text = box && box.value.trim() ? box.value : undefined;
      return text === undefined ? { id: q.id, selected } : { id: q.id, selected, text };
    }).filter((a) => a.selected.length || a.text !== undefined);
    send(answers);
  });
  form.append(el("div", { class: "toolbar" },
    el("button", { type: "submit", "data-answer": item.request_id }, "Send answers"),
    el("button", { type: "button", class: "secondary", onclick: () => send([]) }, "Skip")));
  return form;
}

// A request that ended: each question with its answer, or how it ended.
function userInputAnswered(item) {
  const answers = item.answers || [];
  const ended = { client: "skipped", timeout: "nobody answered in time", interrupt: "cancelled" }[item.resolved_by]
    || "closed when the server restarted";
  return el("div", {}, ...(item.questions || []).map((q) => {
    const a = answers.find((x) => x.id === q.id);
    const said = a ? [...(a.selected || []), a.text].filter(Boolean).join(", ") : ended;
    return el("div", { class: "answer" }, el("strong", {}, q.header + ": "), q.question, " ",
      el("span", { class: a ? "" : "muted" }, "→ " + said));
  }));
}

function approvalButtons(threadId, approvalId) {
  const answer = (decision) => async () => {
    try {
      const body = { decision };
      if (decision === "deny") {
        const reason = prompt("Why deny? (given to the model)");
        if (reason) body.reason = reason;
      }
      await api("POST", `/v1/threads/${threadId}/approvals/${approvalId}`, body);
    } catch (err) { alert(err.message); }
  };
  return el("div", { class: "toolbar", role: "group", "aria-label": "Answer approval" },
    el("button", { onclick: answer("approve"), "data-approve": approvalId }, "Approve"),
    el("button", { class: "secondary", onclick: answer("approve_for_session") }, "Approve for session"),
    el("button", { class: "danger", onclick: answer("deny") }, "Deny"),
    el("button", { class: "secondary", onclick: answer("abort") }, "Abort turn"));
}

// A turn's checkpoint (the workspace before its first change), with its
// two ways back: rewind this workspace, or fork into a new directory.
function checkpointRow(threadId, cp) {
  const done = (what, newId) => {
    const note = el("p", { role: "status", class: "checkpoint-done" }, what + " Continue in thread ",
      el("a", { href: "#/t/" + newId }, newId));
    document.getElementById("items").before(note);
  };
  const rewind = async () => {
    const path = `/v1/threads/${threadId}/rewind`;
    try {
      const out = await api("POST", path, { checkpoint: cp.id });
      done("Rewound.", out.thread.id);
    } catch (e) {
      const files = e.details.files;
      if (!files) { alert(e.message); return; }
      if (!confirm("Changed since the agent's last turn, not by it:\n" + files.join("\n") +
        "\n\nRewind anyway and lose these changes?")) return;
      try { done("Rewound.", (await api("POST", path, { checkpoint: cp.id, force: true })).thread.id); }
      catch (e2) { alert(e2.message); }
    }
  };
  const fork = async () => {
    try {
      const out = await api("POST", `/v1/threads/${threadId}/fork`, { checkpoint: cp.id });
      done("Forked into " + out.workspace + ".", out.id);
    } catch (e) { alert(e.message); }
  };
  const changed = (cp.files_changed || []).length;
  return el("div", { class: "toolbar checkpoint", "data-checkpoint": cp.id },
    el("span", { class: "muted" }, `Checkpoint ${cp.id.slice(0, 12)} · ${changed} file(s) changed`),
    el("button", { class: "secondary", "data-rewind": cp.id, onclick: rewind }, "Rewind to here"),
    el("button", { class: "secondary", "data-fork": cp.id, onclick: fork }, "Fork from here"));
}

async function threadPage(id, signal) {
  const detail = await api("GET", "/v1/threads/" + encodeURIComponent(id));
  const t = detail.thread;
  const status = el("span", { class: "status " + t.status, id: "thread-status", role: "status" }, t.status);
  const items = el("section", { class: "items", id: "items", "aria-live": "polite", "aria-label": "Conversation" });
  const act = (path) => async () => { try { await api("POST", `/v1/threads/${id}/${path}`, {}); } catch (e) { alert(e.message); } };
  const remove = async () => {
    if (!confirm("Delete this thread and its whole history? This cannot be undone.")) return;
    try {
      await api("DELETE", "/v1/threads/" + encodeURIComponent(id));
      location.hash = "#/";
    } catch (e) { alert(e.message); }
  };
  main.replaceChildren(
    el("h1", {}, t.name || "Thread ", el("code", {}, id)),
    el("div", { class: "toolbar" }, status,
      el("span", { class: "muted" }, t.model + " · " + t.workspace),
      el("button", { class: "danger", id: "interrupt", onclick: act("interrupt") }, "Interrupt"),
      el("button", { class: "secondary", id: "pause", onclick: act("pause") }, "Pause"),
      el("button", { class: "secondary", id: "resume", onclick: act("resume") }, "Resume"),
      el("button", { class: "danger", id: "delete", onclick: remove }, "Delete")),
    items);
  for (const turn of detail.turns) {
    // The checkpoint is the state before the turn's first change: shown
    // after its first item, the user's message.
    turn.items.forEach((item, i) => {
      items.append(renderItem(item, id));
      if (i === 0 && turn.checkpoint) items.append(checkpointRow(id, turn.checkpoint));
    });
  }
  const text = el("textarea", { id: "message", required: true, placeholder: "Message the agent" });
  const mode = el("select", { id: "if-busy" },
    el("option", { value: "steer" }, "Steer if busy"),
    el("option", { value: "queue" }, "Queue if busy"),
    el("option", { value: "reject" }, "Refuse if busy"));
  const form = el("form", { class: "composer", "aria-label": "Send a message" },
    el("div", {}, el("label", { for: "message" }, "Message"), text),
    el("div", {}, el("label", { for: "if-busy" }, "While a turn runs"), mode),
    el("button", { type: "submit", id: "send" }, "Send"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!text.value.trim()) return;
    try {
      await api("POST", `/v1/threads/${id}/messages`, { text: text.value, if_busy: mode.value });
      text.value = "";
    } catch (err) { alert(err.message); }
  });
  main.append(form);
  text.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit(); });

  const upsert = (item) => {
    const node = renderItem(item, id);
    const old = document.getElementById("item-" + item.id);
    if (old) old.replaceWith(node); else items.append(node);
    node.scrollIntoView({ block: "nearest" });
  };
  follow(`/v1/threads/${encodeURIComponent(id)}/events?after=${t.last_seq}`, (type, data) => {
    if (type === "thread_deleted" || type === "gone") {
      // Deleted (here or by another client): nothing more will come.
      pageStop.abort();
      setConn("");
      main.replaceChildren(el("p", { role: "status", id: "deleted" }, "This thread was deleted. ",
        el("a", { href: "#/" }, "Back to threads")));
      return;
    }
    if (type === "delta") {
      let node = document.getElementById("item-" + data.item_id);
      if (!node) {
        const kind = { agent_text: "agent_message", reasoning: "reasoning", command_output: "command_execution" }[data.delta] || "agent_message";
        node = renderItem({ id: data.item_id, type: kind, text: "", command: "", output: "" }, id);
        items.append(node);
      }
      const target = node.querySelector(".text");
      if (target) target.textContent += data.text;
      return;
    }
    const p = data.payload || {};
    if (type === "item_started" || type === "item_completed") upsert(p.item);
    if (type === "checkpoint_recorded") items.append(checkpointRow(id, p.checkpoint));
    if (type === "turn_started") { status.textContent = "running"; status.className = "status running"; }
    if (type === "turn_completed") {
      status.textContent = p.status === "failed" ? "failed" : "idle";
      status.className = "status " + status.textContent;
      if (p.status === "interrupted") items.append(el("div", { class: "muted" }, "Turn interrupted."));
    }
    if (type === "thread_paused") status.textContent += " (paused)";
    if (type === "thread_resumed") status.textContent = status.textContent.replace(" (paused)", "");
  }, signal);
}

// ---- Approvals ----
async function approvalsPage(signal) {
  main.replaceChildren(el("h1", {}, "Pending approvals"));
  const list = el("section", { class: "items", id: "approvals", "aria-live": "polite" });
  main.append(list);
  let pending = null;
  const refresh = async () => {
    const all = await api("GET", "/v1/approvals");
    list.replaceChildren(...all.map((a) => el("article", { class: "item approval", id: "approval-" + a.approval_id },
      el("div", { class: "who" }, "Thread ", el("a", { href: "#/t/" + a.thread_id }, a.thread_id)),
      el("div", {}, (a.request.tool || "") + " ", el("code", {}, JSON.stringify(a.request.arguments || a.request))),
      approvalButtons(a.thread_id, a.approval_id))));
    if (!all.length) list.append(el("p", { class: "muted" }, "Nothing waits for an answer."));
  };
  await refresh();
  follow("/v1/events", (type) => {
    if (type === "delta") return;
    clearTimeout(pending);
    pending = setTimeout(refresh, 100);
  }, signal);
}

async function badge(signal) {
  const count = document.getElementById("approval-count");
  const update = async () => {
    try {
      const all = await api("GET", "/v1/approvals");
      count.textContent = all.length;
      count.hidden = all.length === 0;
    } catch (e) { /* shown by the page */ }
  };
  await update();
  let pending = null;
  follow("/v1/events", (type) => {
    if (type === "delta") return;
    clearTimeout(pending);
    pending = setTimeout(update, 200);
  }, signal);
}

async function route() {
  if (pageStop) pageStop.abort();
  pageStop = new AbortController();
  const signal = pageStop.signal;
  const hash = location.hash || "#/";
  try {
    if (document.body.dataset.api === "control-plane") await cpRoute(hash, signal);
    else if (hash.startsWith("#/t/")) await threadPage(decodeURIComponent(hash.slice(4)), signal);
    else if (hash === "#/approvals") await approvalsPage(signal);
    else await threadsPage(signal);
    if (document.body.dataset.api !== "control-plane") badge(signal);
  } catch (err) {
    main.replaceChildren(el("p", { class: "error", role: "alert" }, err.message));
  }
  main.focus();
}

window.addEventListener("hashchange", route);
// Leaving the page ends its streams now, so their sockets are free at once.
window.addEventListener("pagehide", () => { if (pageStop) pageStop.abort(); });
route();
