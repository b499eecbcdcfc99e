// The chat page: starts runs with POST /threads/{id}/runs, reads the SSE stream of
// SPEC §8 from the response body, and renders it: tool cards from `step` events, the
// answer from `answer` deltas (markdown), a divider on `compact`, follow-ups (sent to
// /inject while a run is going) as interrupts, a divider when a fallback model takes a call
// over (`model_switch`), and a footer from `done` saying in plain words how the run ended, how
// long it worked (a run paused for approval: its parts added up), its tool rounds and tokens
// and the model that served it; the codes themselves (`finish_reason`, iterations) sit in the
// footer's closed "details". Every icon the page writes is a character the fonts it names
// have (Liberation, Noto CJK: .ci/run installs them), never one that shows as a box. While a run goes, the status line counts the
// seconds of the current step and Stop ends the run (POST /threads/{id}/cancel); a stopped
// run can be resumed (POST /threads/{id}/resume). A run that pauses for approval
// (`approval` event, SPEC R13.3) puts Approve / Edit / Reject on the waiting tool cards;
// once every waiting call is decided the decisions go to POST /threads/{id}/approvals, whose
// stream continues the same turn. Conversations are listed in the header (kept in this
// browser); opening one reads it back with GET /threads/{id}, a paused one with its
// waiting calls to decide. The open conversation's id is the address's #fragment.
// DAG mode (the mode picker shows when the server serves it, set to its default):
// the `plan` event is drawn as a small graph (an SVG box per step, arrows from each
// dependency) whose boxes light up as `dag_step` events say the step is running, completed
// or failed; under it each step has its section with its tool cards and result, and each
// `analysis` gets a line. A conversation keeps the mode of its first run.
"use strict";

(function () {
  // The footer's model part: the model that served the run, and the calls each
  // model answered when more than one did; "" for an agent without fallback models.
  function servedBy(done) {
    if (!done.model) return "";
    const usage = done.model_usage || {};
    const names = Object.keys(usage);
    if (names.length < 2) return " · answered by " + done.model;
    return " · answered by " + done.model + " (calls: " +
      names.map(function (name) { return name + " " + usage[name].model_calls; }).join(", ") + ")";
  }

  const transcript = document.getElementById("transcript");
  const form = document.getElementById("chat");
  const input = document.getElementById("message");
  const threadLabel = document.getElementById("thread");
  const picker = document.getElementById("conversations");
  const newButton = document.getElementById("new-thread");
  const stopButton = document.getElementById("stop");
  const notice = document.getElementById("notice");
  const authBox = document.getElementById("auth");
  const modePicker = document.getElementById("mode");
  const modeNote = document.getElementById("mode-note");
  const keyInput = document.getElementById("api-key");
  const KEPT = 20;  // conversations listed in the header

  let threadId = null;
  let running = null;  // the turn whose stream is being read
  let waiting = null;  // the turn whose run waits for approval decisions
  let pendingRetry = null;
  let defaultMode = "react";  // the server's (GET /healthz)
  let threadMode = null;  // the open conversation's mode, once it has a run
  let plans = 0;  // plan graphs drawn: each gets its own arrow marker id
  const SVG = (function () {  // the SVG namespace as the HTML parser gives it (the page's files name no URL)
    const holder = document.createElement("div");
    holder.innerHTML = "<svg></svg>";  // a constant: no model or user text is ever parsed as HTML
    return holder.firstChild.namespaceURI;
  })();

  function newThreadId() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return "web-" + Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // The transcript stays scrolled to its end while the reader is there: when a node grows (an
  // answer streams, a font arrives) or the transcript shrinks (the mode picker or a taller input
  // bar appears), it scrolls again, so the last line (e.g. the Resume notice) is never left
  // under the input bar. A reader who scrolled up is left where they are.
  let atEnd = true;
  transcript.addEventListener("scroll", function () {
    atEnd = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 4;
  });
  const sizes = new ResizeObserver(function () {
    if (atEnd) transcript.scrollTop = transcript.scrollHeight;
  });
  sizes.observe(transcript);

  function add(node) {
    transcript.appendChild(node);
    sizes.observe(node);
    transcript.scrollTop = transcript.scrollHeight;
    atEnd = true;
    return node;
  }

  function say(text) {
    notice.textContent = text;
    notice.hidden = !text;
  }

  function headers() {
    const h = { "Content-Type": "application/json", "Accept": "text/event-stream" };
    const key = sessionStorage.getItem("reactgraph.key");
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
  }

  function threadPath(path) {
    return "/threads/" + encodeURIComponent(threadId) + path;
  }

  async function reason(response) {
    try {
      const body = await response.json();
      return typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch (_) {
      return response.statusText;
    }
  }

  function askForKey(retry) {
    pendingRetry = retry;
    authBox.hidden = false;
    keyInput.focus();
  }

  document.getElementById("save-key").addEventListener("click", function () {
    sessionStorage.setItem("reactgraph.key", keyInput.value);
    authBox.hidden = true;
    const retry = pendingRetry;
    pendingRetry = null;
    if (retry) retry();
    loadConversations();  // the key names whose conversations these are
  });

  // ------------------------------------------------------------ conversations

  // The conversations are the server's: GET /threads lists the caller's (the principal its
  // key names), newest first. A conversation started here is listed at once, before the
  // server's list is read again.
  let listed = [];

  async function loadConversations() {
    try {
      const response = await fetch("/threads?limit=" + KEPT, { headers: headers() });
      if (!response.ok) return;  // 401: the key box asks when a request needs it
      const page = await response.json();
      const served = (page.threads || []).map(function (item) { return { id: item.thread_id, title: item.question }; });
      const started = listed.filter(function (item) {  // started here while the list was read
        return !served.some(function (other) { return other.id === item.id; });
      });
      listed = started.concat(served).slice(0, KEPT);
    } catch (_) {
      return;  // the server is not reachable: the list stays as it is
    }
    listConversations();
  }

  function remember(id, title) {
    const known = listed.find(function (item) { return item.id === id; });
    const kept = listed.filter(function (item) { return item.id !== id; });
    kept.unshift({ id: id, title: known ? known.title : title });
    listed = kept.slice(0, KEPT);
    listConversations();
  }

  function listConversations() {
    picker.replaceChildren();
    const list = listed;
    if (!list.some(function (item) { return item.id === threadId; })) {
      picker.appendChild(el("option", "", "new conversation")).value = threadId;
    }
    list.forEach(function (item) {
      const title = String(item.title || item.id);
      const option = picker.appendChild(el("option", "", title.length > 48 ? title.slice(0, 47) + "…" : title));
      option.value = item.id;
    });
    picker.value = threadId;
  }

  // The mode picker follows the open conversation: a new one starts in the server's default
  // mode (the picker may change it), one with runs keeps theirs.
  // Greyed once the conversation has a run, with a line under the input saying why.
  function setMode(mode) {
    threadMode = mode;
    modePicker.value = mode || defaultMode;
    modePicker.disabled = Boolean(mode);
    const name = mode === "dag" ? "DAG plan" : "ReAct";
    modePicker.title = mode ? "this conversation runs in " + mode + " mode (a conversation keeps the mode of its first run)"
      : "ReAct: one tool loop · DAG: a plan of steps, run in parallel where it allows";
    modeNote.textContent = mode ? "This conversation answers in " + name + " mode, the mode of its first run; " +
      "start a New conversation to choose another." : "";
    modeNote.hidden = !mode || modePicker.hidden;
  }

  // The example questions of the served agent (GET /healthz `examples`), offered on an empty
  // conversation: a click asks it.
  let examples = [];
  function dropExamples() {
    const shown = transcript.querySelector(".examples");
    if (shown) shown.remove();
  }

  function offerExamples() {
    dropExamples();
    if (!examples.length || transcript.childElementCount) return;
    const box = add(el("div", "examples"));
    box.appendChild(el("div", "examples-title", "Try one of these questions:"));
    examples.forEach(function (text) {
      const button = box.appendChild(el("button", "example", text));
      button.type = "button";
      button.addEventListener("click", function () {
        input.value = text;
        form.requestSubmit();
      });
    });
  }

  fetch("/healthz").then(function (response) { return response.ok ? response.json() : null; }).then(function (health) {
    if (!health) return;
    examples = (health.examples || []).map(String);
    offerExamples();
    if (!(health.modes || []).includes("dag")) return;
    defaultMode = health.default_mode || "react";
    modePicker.hidden = false;
    setMode(threadMode);
  }).catch(function () { /* the picker stays hidden: ReAct runs */ });

  function setThread(id) {
    threadId = id;
    threadLabel.textContent = "thread " + id;
    if (location.hash.slice(1) !== id) history.replaceState(null, "", "#" + id);
    listConversations();
  }

  function leaveTurn() {
    waiting = null;
    transcript.replaceChildren();
    say("");
    setMode(null);
    offerExamples();
  }

  newButton.addEventListener("click", function () {
    if (running) return;
    leaveTurn();
    setThread(newThreadId());
    input.focus();
  });

  picker.addEventListener("change", function () {
    if (running) { picker.value = threadId; return; }
    openThread(picker.value);
  });

  window.addEventListener("hashchange", function () {
    const id = location.hash.slice(1);
    if (id && id !== threadId && !running) openThread(id);
  });

  // Read a conversation back from the server and show it: each turn's question and answer,
  // the last turn's tool cards, and what a paused run waits on (to decide here).
  async function openThread(id) {
    leaveTurn();
    setThread(id);
    const response = await fetch(threadPath(""), { headers: headers() });
    if (response.status === 401) { askForKey(function () { openThread(id); }); return; }
    if (response.status === 404) return;  // nothing said on it yet
    if (!response.ok) { add(el("div", "failure", "the conversation cannot be read: " + await reason(response))); return; }
    const view = await response.json();
    dropExamples();
    const first = (view.messages || []).find(function (message) { return message.type === "human"; });
    if (first) remember(id, String(first.content || id));  // listed at once (opened by its address too), named by its question
    showHistory(view);
  }

  function showHistory(view) {
    if (view.mode === "dag") { showDagHistory(view); return; }
    if (view.messages.length) setMode("react");
    const turns = [];
    view.messages.forEach(function (message) {
      const text = String(message.content || "");
      if (message.type === "human" && message.pinned && !text.startsWith("[USER INTERRUPT] ")) {
        turns.push({ question: text, interrupts: [], answer: "" });
      } else if (!turns.length) {
        return;
      } else if (message.type === "human" && message.pinned) {
        turns[turns.length - 1].interrupts.push(text.slice("[USER INTERRUPT] ".length));
      } else if (message.type === "ai" && !(message.tool_calls || []).length) {
        turns[turns.length - 1].answer = loopAnswer(text);
      }
    });
    turns.forEach(function (item, index) {
      const last = index === turns.length - 1;
      const turn = newTurn();
      add(el("div", "user", item.question));
      item.interrupts.forEach(function (text) { interruptNote("interrupt · taken in by the agent", text); });
      if (last && view.result) {
        (view.result.steps || []).forEach(function (step) {
          finishCard(turn, Object.assign({ iter_elapsed: step.elapsed }, step));
        });
      }
      if (last && view.status === "waiting") {
        askApprovals(turn, view.pending || []);
        turn.waitingNote = add(el("div", "status waiting-note", "waiting for your decision on " + turn.waitingFor + " tool call(s)"));
      } else if (last && view.status === "interrupted") {
        stoppedNote(turn, "this conversation's last run stopped before its end");
      } else if (last && view.status === "running") {
        add(el("div", "status", "a run is going on this conversation elsewhere"));
      } else {
        showAnswer(turn, last && view.result ? view.result.answer : item.answer);
      }
    });
  }

  // A DAG conversation read back: each goal with the answer it got (its assistant message), and
  // the last run's plan with each step's state, tool cards and result.
  function showDagHistory(view) {
    setMode("dag");
    const turns = [];  // each goal with the answer that followed it (the run's assistant message)
    view.messages.forEach(function (message) {
      const text = String(message.content || "");
      if (message.type === "human" && !text.startsWith("[USER INTERRUPT] ")) turns.push({ goal: text, answer: "" });
      else if (message.type === "ai" && turns.length) turns[turns.length - 1].answer = text;
    });
    turns.forEach(function (item, index) {
      const last = index === turns.length - 1;
      const turn = newTurn();
      add(el("div", "user", item.goal));
      if (!last) {
        showAnswer(turn, item.answer);
        return;
      }
      const result = view.result;
      if (result && result.plan && result.plan.length) {
        drawPlan(turn, { round: result.rounds || 1, steps: result.plan, warnings: [] });
        result.plan.forEach(function (step) {
          step.tool_steps.forEach(function (record) {
            finishStepCard(turn, Object.assign({ step_id: step.id, iter_elapsed: record.elapsed }, record));
          });
          if (step.status !== "pending") {
            stepState(turn, step.id, step.status, step.status === "failed" ? step.error : step.result);
          }
        });
      }
      if (view.status === "waiting") {
        askApprovals(turn, view.pending || []);
        turn.waitingNote = add(el("div", "status waiting-note", "waiting for your decision on " + turn.waitingFor + " tool call(s)"));
      } else if (view.status === "interrupted") {
        stoppedNote(turn, "this conversation's last run stopped before its end");
      } else if (view.status === "running") {
        add(el("div", "status", "a run is going on this conversation elsewhere"));
      } else if (result) {
        showAnswer(turn, result.answer);
      }
    });
  }

  // The text of a loop answer as stored (JSON mode stores the action).
  function loopAnswer(text) {
    try {
      const action = JSON.parse(text);
      if (action && typeof action.answer === "string") return action.answer;
    } catch (_) { /* plain text */ }
    return text;
  }

  // ------------------------------------------------------------ sending

  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    if (waiting) {
      say("Decide on the waiting tool call(s) above first, or start a New conversation.");
      return;
    }
    say("");
    input.value = "";
    if (running) sendFollowUp(text); else startRun(text);
  });

  stopButton.addEventListener("click", async function () {
    if (!running) return;
    stopButton.disabled = true;
    setStatus(running, "stopping…");
    const response = await fetch(threadPath("/cancel"), { method: "POST", headers: headers() });
    if (!response.ok && response.status !== 409) say("the run could not be stopped: " + await reason(response));
  });

  function interruptNote(label, text) {
    const note = add(el("div", "interrupt"));
    note.appendChild(el("span", "label", label));
    note.appendChild(document.createTextNode(text));
    return note;
  }

  async function sendFollowUp(text) {
    const note = interruptNote("follow-up · sent", text);
    const response = await fetch(threadPath("/inject"), {
      method: "POST", headers: headers(), body: JSON.stringify({ message: text }),
    });
    if (response.status === 401) { note.remove(); askForKey(function () { sendFollowUp(text); }); return; }
    note.querySelector(".label").textContent = response.ok ? "follow-up · queued" : "follow-up · not delivered: " + await reason(response);
    if (response.ok) note.dataset.pending = text;
  }

  function newTurn() {
    return { cards: new Map(), answer: null, answerText: "", view: null, status: null, frame: 0, decisions: null,
      steps: new Map(), round: 0 };
  }

  async function startRun(text) {
    dropExamples();
    const turn = newTurn();
    add(el("div", "user", text));
    remember(threadId, text);
    const body = { message: text };
    if (!modePicker.hidden) {
      body.mode = threadMode || modePicker.value;
      setMode(body.mode);
    }
    await streamRun(turn, "/runs", body, function () { startRun(text); });
  }

  // The status line of a running turn: what it does and, once a second has passed, for how long.
  function setStatus(turn, text) {
    turn.statusText = text;
    turn.statusSince = Date.now();
    showStatus(turn);
  }

  function showStatus(turn) {
    if (!turn.status) return;
    const seconds = Math.floor((Date.now() - turn.statusSince) / 1000);
    turn.status.querySelector(".status-text").textContent = turn.statusText;
    turn.status.querySelector(".timer").textContent = seconds >= 1 ? " " + seconds + " s" : "";
  }

  function setRunning(turn) {
    running = turn;
    stopButton.hidden = !turn;
    stopButton.disabled = false;
    newButton.disabled = Boolean(turn);
    newButton.title = turn ? "a run is going: Stop it, or wait for its answer" : "";
    picker.disabled = Boolean(turn);
  }

  setInterval(function () { if (running) showStatus(running); }, 1000);

  // POST `body` to /threads/{id}<path> and render the SSE stream it answers into `turn`.
  async function streamRun(turn, path, body, retry) {
    setRunning(turn);
    turn.status = add(el("div", "status"));
    turn.status.appendChild(el("span", "status-text"));
    turn.status.appendChild(el("span", "timer"));
    setStatus(turn, "starting…");
    let response;
    try {
      response = await fetch(threadPath(path), { method: "POST", headers: headers(), body: JSON.stringify(body) });
    } catch (error) {
      fail(turn, "the server cannot be reached: " + error);
      return;
    }
    if (response.status === 401) { setRunning(null); turn.status.remove(); askForKey(retry); return; }
    if (!response.ok) { fail(turn, await reason(response)); return; }
    try {
      await readEvents(response.body, function (channel, data) { handle(turn, channel, data); });
    } catch (error) {
      add(el("div", "failure", "the stream broke off: " + error));
    }
    setRunning(null);
    turn.status.remove();
    turn.status = null;
  }

  function fail(turn, message) {
    setRunning(null);
    turn.status.remove();
    turn.status = null;
    add(el("div", "failure", message));
  }

  // Server-sent events from a fetch body: frames end with a blank line; lines starting
  // with ":" are keep-alive comments.
  async function readEvents(body, onEvent) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let channel = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) channel = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(channel, JSON.parse(data.join("\n")));
      }
    }
  }

  // ------------------------------------------------------------ tool cards

  function argsText(args) {
    return JSON.stringify(args === undefined ? {} : args, null, 2);
  }

  // The card of a tool call, made on first use: in the transcript, or in `into` (a DAG step's section).
  function cardFor(turn, data, into) {
    const key = data.tool_call_id || data.iteration + ":" + data.tool_name;
    let card = turn.cards.get(key);
    if (card) return card;
    card = into ? into.appendChild(el("details", "tool-card")) : add(el("details", "tool-card"));
    card.dataset.status = "running";
    const summary = el("summary");
    summary.appendChild(el("span", "tool-name", data.tool_name));
    summary.appendChild(el("span", "state", "running…"));
    summary.appendChild(el("span", "elapsed", ""));
    card.appendChild(summary);
    const body = el("div", "body");
    body.appendChild(el("h4", "", "arguments"));
    body.appendChild(el("pre", "args", argsText(data.tool_args)));
    card.appendChild(body);
    turn.cards.set(key, card);
    return card;
  }

  function askApprovals(turn, pending) {
    turn.decisions = new Map();
    turn.waitingFor = pending.filter(function (call) { return call.kind === "approval"; }).length;
    waiting = turn;
    pending.forEach(function (call) { askApproval(turn, call); });
  }

  // Approve / Edit / Reject on a waiting call's card (SPEC R13.3). The arguments show once,
  // on the card; Edit turns them into a JSON box checked as it is typed.
  function askApproval(turn, call) {
    const card = call.step_id ? stepCard(turn, call) : cardFor(turn, call);
    if (call.step_id) stepState(turn, call.step_id, "waiting");
    card.open = true;
    card.dataset.status = "waiting";
    card.querySelector(".state").textContent = "‖ awaiting approval";
    // A DAG step's call by its interrupt id: parallel steps' loops may give their calls one id.
    const key = call.step_id ? call.interrupt_id : call.tool_call_id || call.interrupt_id;
    const body = card.querySelector(".body");
    const panel = el("div", "approval");
    if (call.kind !== "approval") {  // a tool's own interrupt(): answered from the library or Studio
      panel.appendChild(el("h4", "", "the tool waits for input"));
      panel.appendChild(el("pre", "", JSON.stringify(call.value, null, 2)));
      body.appendChild(panel);
      return;
    }
    const shown = body.querySelector("pre.args");
    const original = argsText(call.tool_args);
    shown.textContent = original;
    const box = el("textarea", "approval-args");
    box.hidden = true;
    box.spellcheck = false;
    box.setAttribute("aria-label", "arguments to run the call with (JSON)");
    shown.after(box);
    const problem = panel.appendChild(el("div", "approval-problem"));
    const note = panel.appendChild(el("input", "approval-message"));
    note.placeholder = "message for the agent when rejecting (optional)";
    const buttons = panel.appendChild(el("div", "approval-buttons"));
    const approve = buttons.appendChild(el("button", "approve", "Approve"));
    const edit = buttons.appendChild(el("button", "edit", "Edit"));
    const reject = buttons.appendChild(el("button", "reject", "Reject"));
    [approve, edit, reject].forEach(function (button) { button.type = "button"; });
    let edited = null;  // the parsed arguments while editing, null when they are not a JSON object

    function check() {
      edited = null;
      let value;
      try { value = JSON.parse(box.value); } catch (error) {
        problem.textContent = "not JSON yet: " + error.message;
        approve.disabled = true;
        return;
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        problem.textContent = "the arguments must be a JSON object";
        approve.disabled = true;
        return;
      }
      edited = value;
      problem.textContent = "";
      approve.disabled = false;
    }

    function decide(decision, label) {
      turn.decisions.set(key, decision);
      box.remove();
      shown.hidden = false;
      if (decision.type === "edit") shown.textContent = argsText(decision.args);
      panel.replaceChildren(el("div", "approval-decided", label));
      card.querySelector(".state").textContent = label;
      if (turn.decisions.size === turn.waitingFor) sendDecisions(turn);
    }

    box.addEventListener("input", check);
    edit.addEventListener("click", function () {
      const editing = box.hidden;
      box.hidden = !editing;
      shown.hidden = editing;
      edit.textContent = editing ? "Cancel edit" : "Edit";
      approve.textContent = editing ? "Approve edited" : "Approve";
      if (editing) {
        box.value = original;
        box.rows = Math.min(14, original.split("\n").length + 1);
        check();
        box.focus();
      } else {
        problem.textContent = "";
        approve.disabled = false;
      }
    });
    approve.addEventListener("click", function () {
      if (box.hidden || JSON.stringify(edited, null, 2) === original) decide({ type: "approve" }, "✓ approved");
      else if (edited) decide({ type: "edit", args: edited }, "✓ approved with edited arguments");
    });
    reject.addEventListener("click", function () {
      decide({ type: "reject", message: note.value.trim() || null }, "⊘ rejected");
    });
    body.appendChild(panel);
  }

  async function sendDecisions(turn) {
    const decisions = Array.from(turn.decisions, function (entry) {
      return Object.assign({ tool_call_id: entry[0] }, entry[1]);
    });
    turn.decisions = null;
    waiting = null;
    say("");
    if (turn.waitingNote) turn.waitingNote.remove();
    await streamRun(turn, "/approvals", { decisions: decisions }, function () { sendDecisions(turn); });
  }

  function finishCard(turn, data, card) {
    card = card || cardFor(turn, data);
    const body = card.querySelector(".body");
    const state = card.querySelector(".state");
    card.querySelector(".elapsed").textContent = Number(data.iter_elapsed || 0).toFixed(2) + " s";
    if (data.repeat_of_decided) {  // asked again for a call already decided: answered with that decision's outcome
      card.dataset.status = "repeat";
      state.textContent = data.approval === "rejected" ? "= asked again · rejected before" : "= asked again · earlier result";
    } else if (data.approval === "rejected") {
      card.dataset.status = "rejected";
      state.textContent = "⊘ rejected";
    } else if (data.ran === false) {  // refused by the engine before it started: the tool did nothing
      card.dataset.status = "error";
      state.textContent = "⊘ not run";
    } else {
      card.dataset.status = data.error ? "error" : "ok";
      state.textContent = data.error ? "× error" : data.approval ? "✓ done (" + data.approval + ")" : "✓ done";
    }
    if (data.approval === "rejected") {  // the person's message is the observation: shown once
      body.appendChild(el("h4", "", "the agent was told"));
      body.appendChild(el("pre", "rejection", String(data.observation || data.error || "")));
      return;
    }
    body.appendChild(el("h4", "", "observation"));
    body.appendChild(el("pre", "observation", String(data.observation || "")));
    if (data.error && data.error !== data.observation && "Error: " + data.error !== data.observation) {
      body.appendChild(el("h4", "", "error"));
      body.appendChild(el("pre", "error", String(data.error)));
    }
  }

  // ------------------------------------------------------------ DAG mode: the plan

  // Each step's layer: 0 without dependencies, else one below its deepest dependency.
  function layers(steps) {
    const byId = new Map(steps.map(function (step) { return [step.id, step]; }));
    const depth = new Map();
    function of(id, seen) {
      if (depth.has(id)) return depth.get(id);
      const step = byId.get(id);
      let d = 0;
      (step ? step.dependencies : []).forEach(function (dep) {
        if (byId.has(dep) && !seen.has(dep)) d = Math.max(d, of(dep, new Set(seen).add(dep)) + 1);
      });
      depth.set(id, d);
      return d;
    }
    steps.forEach(function (step) { of(step.id, new Set([step.id])); });
    return depth;
  }

  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (name) { node.setAttribute(name, attrs[name]); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function clip(text, length) {
    const value = String(text || "");
    return value.length > length ? value.slice(0, length - 1) + "…" : value;
  }

  // The plan of a round as a graph: a box per step (id, task, state) in rows by layer, an arrow
  // from each dependency; under it a section per step for its tool cards and result.
  function drawPlan(turn, plan) {
    const W = 168, H = 56, GAP_X = 22, GAP_Y = 38, PAD = 8;
    // A task is read as plain words: a small model's planner may write "**Check** …".
    const steps = (plan.steps || []).map(function (step) {
      return Object.assign({}, step, { task: window.markdownText(step.task) });
    });
    const depth = layers(steps);
    const rows = [];
    steps.forEach(function (step) {
      const d = depth.get(step.id);
      (rows[d] = rows[d] || []).push(step);
    });
    const widest = Math.max(1, ...rows.map(function (row) { return row ? row.length : 0; }));
    const width = widest * W + (widest - 1) * GAP_X + 2 * PAD;
    const height = rows.length * H + (rows.length - 1) * GAP_Y + 2 * PAD;
    const box = add(el("div", "plan"));
    box.dataset.round = plan.round;
    box.appendChild(el("div", "plan-title", "plan · round " + plan.round + " · " + steps.length + " step(s)"));
    const graph = svg("svg", { class: "plan-graph", viewBox: "0 0 " + width + " " + height, role: "img",
      "aria-label": "the plan of round " + plan.round + ": " + steps.length + " steps and their dependencies" }, box);
    graph.style.maxWidth = width + "px";
    const marker = "plan-arrow-" + (++plans);
    const defs = svg("defs", {}, graph);
    const arrow = svg("marker", { id: marker, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7,
      orient: "auto-start-reverse" }, defs);
    svg("path", { d: "M0,0 L10,5 L0,10 z", class: "plan-arrow" }, arrow);
    const at = new Map();
    rows.forEach(function (row, d) {
      const offset = (width - (row.length * W + (row.length - 1) * GAP_X)) / 2;
      row.forEach(function (step, i) { at.set(step.id, { x: offset + i * (W + GAP_X), y: PAD + d * (H + GAP_Y) }); });
    });
    const edges = svg("g", {}, graph);
    steps.forEach(function (step) {
      const to = at.get(step.id);
      step.dependencies.forEach(function (dep) {
        const from = at.get(dep);
        if (!from) return;
        const x1 = from.x + W / 2, y1 = from.y + H, x2 = to.x + W / 2, y2 = to.y - 2, mid = (y1 + y2) / 2;
        svg("path", { class: "plan-edge", "data-from": dep, "data-to": step.id, "marker-end": "url(#" + marker + ")",
          d: "M" + x1 + "," + y1 + " C" + x1 + "," + mid + " " + x2 + "," + mid + " " + x2 + "," + y2 }, edges);
      });
    });
    turn.steps = new Map();
    turn.doing = new Map();
    turn.round = plan.round;
    const sections = el("div", "plan-steps");
    steps.forEach(function (step) {
      const p = at.get(step.id);
      const node = svg("g", { class: "plan-node", "data-step": step.id, "data-state": "pending",
        transform: "translate(" + p.x + "," + p.y + ")", tabindex: "0" }, graph);
      svg("title", {}, node).textContent = step.id + ": " + step.task;
      svg("rect", { width: W, height: H, rx: 7 }, node);
      svg("text", { x: 9, y: 17, class: "node-id" }, node).textContent = clip(step.id, 12);
      svg("text", { x: W - 9, y: 17, class: "node-state", "text-anchor": "end" }, node).textContent = "pending";
      svg("text", { x: 9, y: 36, class: "node-task" }, node).textContent = clip(step.task, 21);
      if (step.model_hint) svg("text", { x: 9, y: 50, class: "node-role" }, node).textContent = clip(step.model_hint, 22);
      const section = sections.appendChild(el("section", "dag-step"));
      section.dataset.step = step.id;
      section.dataset.state = "pending";
      const title = section.appendChild(el("h3"));
      title.appendChild(el("span", "step-id", step.id));
      title.appendChild(document.createTextNode(" " + step.task));
      title.appendChild(el("span", "step-state", "pending"));
      section.appendChild(el("div", "step-cards"));
      section.appendChild(el("div", "step-result"));
      node.addEventListener("click", function () { section.scrollIntoView({ block: "nearest" }); });
      turn.steps.set(step.id, { node: node, section: section });
    });
    (plan.warnings || []).forEach(function (warning) {
      box.appendChild(el("div", "plan-warning", "! " + window.markdownText(warning)));
    });
    box.appendChild(sections);
    transcript.scrollTop = transcript.scrollHeight;
  }

  const STATE_LABELS = { pending: "pending", running: "running…", completed: "✓ completed", failed: "× failed",
    waiting: "awaiting approval" };

  // Light a step's box and section up: pending, running, waiting, completed or failed.
  function stepState(turn, stepId, state, result) {
    const step = turn.steps.get(stepId);
    if (!step) return;
    step.node.dataset.state = state;
    step.node.querySelector(".node-state").textContent = STATE_LABELS[state] || state;
    step.section.dataset.state = state;
    step.section.querySelector(".step-state").textContent = STATE_LABELS[state] || state;
    if (result !== undefined) {  // a step's result is Markdown, as an answer is
      const box = step.section.querySelector(".step-result");
      box.replaceChildren();
      new window.MarkdownView(box).update(String(result || "") + "\n\n");
    }
  }

  // A step's tool call card, in its section; keyed by round, step and the loop's own call id.
  function stepCard(turn, data) {
    const step = turn.steps.get(data.step_id);
    const keyed = Object.assign({}, data, { tool_call_id: "dag:" + turn.round + ":" + data.step_id + ":" + data.tool_call_id });
    return cardFor(turn, keyed, step ? step.section.querySelector(".step-cards") : null);
  }

  function finishStepCard(turn, data) {
    finishCard(turn, data, stepCard(turn, data));
  }

  function handleDag(turn, channel, data) {
    if (channel === "plan") {
      drawPlan(turn, data);
    } else if (channel === "analysis") {
      // In plain words (reactgraph/wording.py's verdict_words); the figures stay in the title.
      const confidence = Number(data.confidence || 0);
      const sure = confidence >= 0.8 ? "sure" : confidence >= 0.5 ? "fairly sure" : "unsure";
      const line = add(el("div", "analysis", "Check after round " + data.round + ": " +
        (data.achieved ? "the goal looks reached (" + sure + ")" : "the goal is not reached yet (" + sure + ")") +
        (data.replan ? ", so the agent plans again." : ".") +
        (data.reasoning && data.reasoning !== (data.achieved ? "achieved" : "not achieved")
          ? " " + window.markdownText(data.reasoning) : "")));
      line.title = "achieved: " + data.achieved + " · confidence: " + confidence.toFixed(2) + " · replan: " + Boolean(data.replan);
    } else if (data.status === "started") {
      stepState(turn, data.step_id, "running");
      stepDoing(turn, data.step_id, "starting on " + data.model_role);
    } else if (data.status === "iteration") {
      stepDoing(turn, data.step_id, "thinking (iteration " + data.iteration + ")");
    } else if (data.status === "tool_started") {
      stepCard(turn, data).querySelector("pre.args").textContent = argsText(data.tool_args);
      stepDoing(turn, data.step_id, "running " + data.tool_name);
    } else if (data.status === "tool") {
      finishStepCard(turn, data);
    } else if (data.status === "completed") {
      stepState(turn, data.step_id, data.ok ? "completed" : "failed", data.ok ? data.result : data.error);
      stepDoing(turn, data.step_id, null);
    }
  }

  // The status line of a DAG run: what each running step does ("step a: running scan · step b: thinking …").
  function stepDoing(turn, stepId, text) {
    turn.doing = turn.doing || new Map();
    if (text) turn.doing.set(stepId, text); else turn.doing.delete(stepId);
    if (!turn.doing.size) return;
    setStatus(turn, Array.from(turn.doing, function (entry) { return "step " + entry[0] + ": " + entry[1]; }).join(" · ") + "…");
  }

  // ------------------------------------------------------------ the answer

  // The answer so far, rendered incrementally: only what changed since the last frame.
  function renderAnswer(turn) {
    turn.frame = 0;
    if (!turn.view) turn.view = new window.MarkdownView(turn.answer.querySelector(".answer-body"));
    turn.view.update(turn.answerText);
  }

  function openAnswer(turn) {
    if (turn.answer) return;
    turn.answer = add(el("div", "answer"));
    turn.answer.appendChild(el("div", "answer-body"));
  }

  function showAnswer(turn, text) {
    openAnswer(turn);
    turn.answerText = String(text || "");
    renderAnswer(turn);
  }

  function stoppedNote(turn, why) {
    const note = add(el("div", "stopped"));
    note.appendChild(el("span", "", why + ". "));
    const resume = note.appendChild(el("button", "resume", "Resume"));
    resume.type = "button";
    note.appendChild(el("span", "", " finishes it; a new message starts the next turn."));
    resume.addEventListener("click", function () {
      if (running) return;
      note.remove();
      streamRun(turn, "/resume", {}, function () { streamRun(turn, "/resume", {}, null); });
    });
  }

  // How each finish_reason reads (the same words as reactgraph/wording.py's FINISH_WORDS).
  const FINISH_WORDS = {
    final_answer: "Answered",
    covered: "Answered from the tool results",
    return_direct: "A tool's result is the answer",
    raw_content: "Answered with the model's reply as written (it was not a tool call)",
    stalled: "The agent was going in circles, so it answered with what it had",
    max_iterations: "Stopped at the step limit and answered with what it had",
    model_call_limit: "Stopped at the limit on model calls and answered with what it had",
    tool_call_limit: "Stopped at the limit on tool calls and answered with what it had",
    token_limit: "Stopped at the token limit and answered with what it had",
    cost_limit: "Stopped at the cost limit and answered with what it had",
    model_error: "The model failed",
    storage_error: "The conversation could not be saved",
    waiting: "Waiting for your decision",
    cancelled: "Stopped before its end",
    error: "The run failed",
    achieved: "The plan reached its goal",
    not_achieved: "The plan did not fully reach its goal",
    max_rounds: "Stopped after the most planning rounds and answered with what it had",
    plan_failed: "No workable plan could be made",
  };

  // Which call wrote the answer under synthesis="auto" (reactgraph/wording.py's ANSWER_SOURCE_WORDS).
  const ANSWER_SOURCE_WORDS = {
    loop: "the answer is the model's reply in the tool loop",
    synthesis: "the answer was written by a separate call",
    observations: "the answer is the tool results as they came",
  };

  function plural(count, word) {
    return count + " " + word + (count === 1 ? "" : "s");
  }

  // The footer of a finished run: a sentence in plain words, then a closed "details" with the
  // codes the API carries. `worked`: seconds of the run's earlier parts (before a pause).
  function footer(data, worked) {
    const usage = data.usage || {};
    const seconds = Number(data.elapsed || 0) + (worked || 0);
    const node = el("div", "footer");
    const words = FINISH_WORDS[data.finish_reason] || "Ended";
    node.appendChild(el("span", "footer-text", words + " in " + seconds.toFixed(1) + " s · " +
      (data.rounds ? plural(data.rounds, "planning round") : plural(data.iterations || 0, "step")) +
      " · " + (usage.total_tokens || 0) + " tokens (" + (usage.input_tokens || 0) + " in, " +
      (usage.output_tokens || 0) + " out)" + servedBy(data) +
      (ANSWER_SOURCE_WORDS[data.answer_source] ? " · " + ANSWER_SOURCE_WORDS[data.answer_source] : "")));
    const details = node.appendChild(el("details", "footer-codes"));
    details.appendChild(el("summary", "", "details"));
    details.appendChild(el("code", "", "finish_reason: " + (data.finish_reason || "unknown") + " · iterations: " +
      data.iterations + (data.rounds ? " · rounds: " + data.rounds : "") + " · elapsed: " + seconds.toFixed(3) +
      " s · model_calls: " + (usage.model_calls || 0) + (data.answer_source ? " · answer_source: " + data.answer_source : "")));
    return node;
  }

  function handle(turn, channel, data) {
    if (channel === "phase" && data.phase === "planning") {
      setStatus(turn, "planning (round " + data.round + ")…");
    } else if (channel === "phase" && data.phase === "analyzing") {
      setStatus(turn, "analyzing the results (round " + data.round + ")…");
    } else if (channel === "phase") {
      setStatus(turn, "selecting tools among " + data.total_tools + "…");
    } else if (channel === "plan" || channel === "dag_step" || channel === "analysis") {
      handleDag(turn, channel, data);
    } else if (channel === "step" && data.type === "thinking") {
      if (data.status === "start") setStatus(turn, "thinking (iteration " + data.iteration + ")…");
      else if (data.reasoning) add(el("div", "reasoning", data.reasoning));
    } else if (channel === "step" && data.type === "iteration") {
      if (data.status === "start") {
        // A call decided after a pause starts on its waiting card, with the arguments it runs with.
        cardFor(turn, data).querySelector("pre.args").textContent = argsText(data.tool_args);
        setStatus(turn, "running " + data.tool_name + "…");
      }
      else finishCard(turn, data);
    } else if (channel === "step" && data.type === "answer") {
      setStatus(turn, "writing the answer…");
    } else if (channel === "answer") {
      if (data.status === "start") {
        openAnswer(turn);
      } else if (data.status === "delta") {
        openAnswer(turn);
        turn.answerText += data.content;
        if (!turn.frame) turn.frame = requestAnimationFrame(function () { renderAnswer(turn); });
      } else if (data.status === "done") {
        if (turn.frame) cancelAnimationFrame(turn.frame);
        if (turn.answer) renderAnswer(turn);
      } else if (data.status === "reset" && turn.answer) {
        // The answer failed the grounding check (SPEC R13.1): drop it, a new one follows.
        if (turn.frame) cancelAnimationFrame(turn.frame);
        turn.frame = 0;
        turn.answerText = "";
        renderAnswer(turn);
        setStatus(turn, "rewriting the answer from the tool results…");
      }
    } else if (channel === "stall") {
      setStatus(turn, "the loop is stuck: asking for the final answer…");
    } else if (channel === "model_switch") {
      add(el("div", "divider model-switch", data.previous + " failed (" + data.reason + "): " + data.call +
        " goes on with " + data.model));
    } else if (channel === "compact") {
      add(el("div", "divider", "context compacted: " + data.original_messages + " → " + data.kept_messages + " messages"));
    } else if (channel === "inject") {
      const pending = Array.from(transcript.querySelectorAll(".interrupt[data-pending]"))
        .find(function (node) { return node.dataset.pending === data.content; });
      if (pending) {
        delete pending.dataset.pending;
        pending.querySelector(".label").textContent = "interrupt · taken in by the agent";
      } else {
        interruptNote("interrupt · taken in by the agent", data.content);
      }
    } else if (channel === "approval") {
      askApprovals(turn, data.pending);
    } else if (channel === "error" && data.kind === "cancelled") {
      turn.cards.forEach(function (card) {
        if (card.dataset.status !== "running") return;
        card.dataset.status = "stopped";
        card.querySelector(".state").textContent = "■ stopped";
      });
      turn.steps.forEach(function (step, id) { if (step.node.dataset.state === "running") stepState(turn, id, "pending"); });
      stoppedNote(turn, "Stopped");
    } else if (channel === "error") {
      add(el("div", "failure", (data.kind === "model_error" ? "model error: " : "error: ") + data.message));
    } else if (channel === "done" && data.finish_reason === "waiting") {
      turn.worked = (turn.worked || 0) + Number(data.elapsed || 0);  // the footer adds the part before the pause
      turn.waitingNote = add(el("div", "status waiting-note", "waiting for your decision on " + turn.waitingFor + " tool call(s)"));
    } else if (channel === "done") {
      if (!turn.answer) showAnswer(turn, data.answer);
      turn.answer.appendChild(footer(data, turn.worked));
    }
  }

  const opened = location.hash.slice(1);
  if (/^[A-Za-z0-9._:-]{1,128}$/.test(opened)) openThread(opened); else setThread(newThreadId());
  loadConversations();
})();
