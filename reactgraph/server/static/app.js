// The chat page: starts runs with POST /threads/{id}/runs, reads the SSE stream of
// SPEC §8 from the response body, and renders it: tool cards from `step` events, the
// answer from `answer` deltas (markdown), a divider on `compact`, follow-ups (sent to
// /inject while a run is going) as interrupts, a divider when a fallback model takes a call
// over (`model_switch`), and a footer from `done` (with the model that served the run). A run that
// pauses for approval (`approval` event, SPEC R13.3) puts approve / edit / reject on the
// waiting tool cards; once every waiting call is decided the decisions go to
// POST /threads/{id}/approvals, whose stream continues the same turn.
"use strict";

(function () {
  // The footer's model part (issue 41): the model that served the run, and the calls each
  // model answered when more than one did; "" for an agent without fallback models.
  function servedBy(done) {
    if (!done.model) return "";
    const usage = done.model_usage || {};
    const names = Object.keys(usage);
    if (names.length < 2) return " · model " + done.model;
    return " · model " + done.model + " (calls: " +
      names.map(function (name) { return name + " " + usage[name].model_calls; }).join(", ") + ")";
  }

  const transcript = document.getElementById("transcript");
  const form = document.getElementById("chat");
  const input = document.getElementById("message");
  const threadLabel = document.getElementById("thread");
  const authBox = document.getElementById("auth");
  const keyInput = document.getElementById("api-key");

  let threadId = newThreadId();  // one conversation per page load; "New conversation" starts another
  let running = false;
  let waiting = null;  // the turn whose run waits for approval decisions
  let pendingRetry = null;
  showThread();

  function newThreadId() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return "web-" + Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  function showThread() {
    threadLabel.textContent = "thread " + threadId;
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function add(node) {
    transcript.appendChild(node);
    transcript.scrollTop = transcript.scrollHeight;
    return node;
  }

  function headers() {
    const h = { "Content-Type": "application/json", "Accept": "text/event-stream" };
    const key = sessionStorage.getItem("reactgraph.key");
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
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
  });

  document.getElementById("new-thread").addEventListener("click", function () {
    if (running) return;
    threadId = newThreadId();
    showThread();
    transcript.replaceChildren();
  });

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
      waiting.status.textContent = "decide on the waiting tool calls first";
      return;
    }
    input.value = "";
    if (running) sendFollowUp(text); else startRun(text);
  });

  async function sendFollowUp(text) {
    const note = add(el("div", "interrupt"));
    note.appendChild(el("span", "label", "follow-up · sent"));
    note.appendChild(document.createTextNode(text));
    const response = await fetch("/threads/" + encodeURIComponent(threadId) + "/inject", {
      method: "POST", headers: headers(), body: JSON.stringify({ message: text }),
    });
    if (response.status === 401) { note.remove(); askForKey(function () { sendFollowUp(text); }); return; }
    note.querySelector(".label").textContent = response.ok ? "follow-up · queued" : "follow-up · not delivered: " + await reason(response);
    if (response.ok) note.dataset.pending = text;
  }

  async function startRun(text) {
    const turn = { cards: {}, answer: null, answerText: "", view: null, status: null, frame: 0, decisions: null };
    add(el("div", "user", text));
    await streamRun(turn, "/runs", { message: text }, function () { startRun(text); });
  }

  // POST `body` to /threads/{id}<path> and render the SSE stream it answers into `turn`.
  async function streamRun(turn, path, body, retry) {
    running = true;
    turn.status = add(el("div", "status", "starting…"));
    let response;
    try {
      response = await fetch("/threads/" + encodeURIComponent(threadId) + path, {
        method: "POST", headers: headers(), body: JSON.stringify(body),
      });
    } catch (error) {
      fail(turn, "the server cannot be reached: " + error);
      return;
    }
    if (response.status === 401) { running = false; turn.status.remove(); askForKey(retry); return; }
    if (!response.ok) { fail(turn, await reason(response)); return; }
    try {
      await readEvents(response.body, function (channel, data) { handle(turn, channel, data); });
    } catch (error) {
      add(el("div", "failure", "the stream broke off: " + error));
    }
    running = false;
    turn.status.remove();
  }

  function fail(turn, message) {
    running = false;
    turn.status.remove();
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

  function cardFor(turn, data) {
    const key = data.tool_call_id || data.iteration + ":" + data.tool_name;
    let card = turn.cards[key];
    if (card) return card;
    card = add(el("details", "tool-card"));
    card.dataset.status = "running";
    const summary = el("summary");
    summary.appendChild(el("span", "tool-name", data.tool_name));
    summary.appendChild(el("span", "state", "running…"));
    summary.appendChild(el("span", "elapsed", ""));
    card.appendChild(summary);
    const body = el("div", "body");
    body.appendChild(el("h4", "", "arguments"));
    body.appendChild(el("pre", "args", JSON.stringify(data.tool_args === undefined ? {} : data.tool_args, null, 2)));
    card.appendChild(body);
    turn.cards[key] = card;
    return card;
  }

  // Approve / reject on a waiting call's card (SPEC R13.3). The arguments are editable;
  // "Approve" sends them as an edit when they were changed.
  function askApproval(turn, call) {
    const card = cardFor(turn, call);
    card.open = true;
    card.dataset.status = "waiting";
    card.querySelector(".state").textContent = "⏸ awaiting approval";
    const key = call.tool_call_id || call.interrupt_id;
    const panel = el("div", "approval");
    if (call.kind !== "approval") {  // a tool's own interrupt(): answered from the library or Studio
      panel.appendChild(el("h4", "", "the tool waits for input"));
      panel.appendChild(el("pre", "", JSON.stringify(call.value, null, 2)));
      card.querySelector(".body").appendChild(panel);
      return;
    }
    const original = JSON.stringify(call.tool_args === undefined ? {} : call.tool_args, null, 2);
    panel.appendChild(el("h4", "", "arguments to run with"));
    const args = panel.appendChild(el("textarea", "approval-args"));
    args.value = original;
    args.rows = Math.min(12, original.split("\n").length + 1);
    const note = panel.appendChild(el("input", "approval-message"));
    note.placeholder = "message for the agent when rejecting (optional)";
    const buttons = panel.appendChild(el("div", "approval-buttons"));
    const problem = panel.appendChild(el("div", "approval-problem"));
    function decide(decision, label) {
      turn.decisions[key] = decision;
      panel.replaceChildren(el("div", "approval-decided", label));
      card.querySelector(".state").textContent = label;
      if (Object.keys(turn.decisions).length === turn.waitingFor) sendDecisions(turn);
    }
    buttons.appendChild(el("button", "approve", "Approve")).addEventListener("click", function () {
      let edited;
      try { edited = JSON.parse(args.value); } catch (error) { problem.textContent = "the arguments are not JSON: " + error.message; return; }
      if (edited === null || typeof edited !== "object" || Array.isArray(edited)) { problem.textContent = "the arguments must be a JSON object"; return; }
      if (JSON.stringify(edited, null, 2) === original) decide({ type: "approve" }, "✓ approved");
      else decide({ type: "edit", args: edited }, "✓ approved with edited arguments");
    });
    buttons.appendChild(el("button", "reject", "Reject")).addEventListener("click", function () {
      decide({ type: "reject", message: note.value.trim() || null }, "✗ rejected");
    });
    card.querySelector(".body").appendChild(panel);
  }

  async function sendDecisions(turn) {
    const decisions = Object.keys(turn.decisions).map(function (key) {
      return Object.assign({ tool_call_id: key }, turn.decisions[key]);
    });
    turn.decisions = null;
    waiting = null;
    if (turn.waitingNote) turn.waitingNote.remove();
    await streamRun(turn, "/approvals", { decisions: decisions }, function () { sendDecisions(turn); });
  }

  function finishCard(turn, data) {
    const card = cardFor(turn, data);
    const body = card.querySelector(".body");
    card.dataset.status = data.error ? "error" : "ok";
    card.querySelector(".state").textContent = data.error ? "✗ error" : "✓ done";
    card.querySelector(".elapsed").textContent = Number(data.iter_elapsed || 0).toFixed(2) + " s";
    body.appendChild(el("h4", "", "observation"));
    body.appendChild(el("pre", "observation", String(data.observation || "")));
    if (data.error) {
      body.appendChild(el("h4", "", "error"));
      body.appendChild(el("pre", "error", String(data.error)));
    }
  }

  // The answer so far, rendered incrementally: only what changed since the last frame.
  function renderAnswer(turn) {
    turn.frame = 0;
    if (!turn.view) turn.view = new window.MarkdownView(turn.answer.querySelector(".answer-body"));
    turn.view.update(turn.answerText);
  }

  function handle(turn, channel, data) {
    if (channel === "phase") {
      turn.status.textContent = "selecting tools among " + data.total_tools + "…";
    } else if (channel === "step" && data.type === "thinking") {
      if (data.status === "start") turn.status.textContent = "thinking (iteration " + data.iteration + ")…";
      else if (data.reasoning) add(el("div", "reasoning", data.reasoning));
    } else if (channel === "step" && data.type === "iteration") {
      if (data.status === "start") {
        // A call decided after a pause starts on its waiting card, with the arguments it runs with.
        cardFor(turn, data).querySelector("pre.args").textContent =
          JSON.stringify(data.tool_args === undefined ? {} : data.tool_args, null, 2);
        turn.status.textContent = "running " + data.tool_name + "…";
      }
      else finishCard(turn, data);
    } else if (channel === "step" && data.type === "answer") {
      turn.status.textContent = "writing the answer…";
    } else if (channel === "answer") {
      if (data.status === "start" && !turn.answer) {
        turn.answer = add(el("div", "answer"));
        turn.answer.appendChild(el("div", "answer-body"));
      } else if (data.status === "delta") {
        turn.answerText += data.content;
        if (!turn.frame) turn.frame = requestAnimationFrame(function () { renderAnswer(turn); });
      } else if (data.status === "done") {
        if (turn.frame) cancelAnimationFrame(turn.frame);
        renderAnswer(turn);
      } else if (data.status === "reset" && turn.answer) {
        // The answer failed the grounding check (SPEC R13.1): drop it, a new one follows.
        if (turn.frame) cancelAnimationFrame(turn.frame);
        turn.frame = 0;
        turn.answerText = "";
        renderAnswer(turn);
        turn.status.textContent = "rewriting the answer from the tool results…";
      }
    } else if (channel === "stall") {
      turn.status.textContent = "the loop is stuck: asking for the final answer…";
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
        const note = add(el("div", "interrupt"));
        note.appendChild(el("span", "label", "interrupt · taken in by the agent"));
        note.appendChild(document.createTextNode(data.content));
      }
    } else if (channel === "approval") {
      turn.decisions = {};
      turn.waitingFor = data.pending.filter(function (call) { return call.kind === "approval"; }).length;
      waiting = turn;
      data.pending.forEach(function (call) { askApproval(turn, call); });
    } else if (channel === "error") {
      add(el("div", "failure", "model error: " + data.message));
    } else if (channel === "done" && data.finish_reason === "waiting") {
      turn.waitingNote = add(el("div", "status waiting-note", "waiting for your decision on " + turn.waitingFor + " tool call(s)"));
    } else if (channel === "done") {
      if (!turn.answer) {
        turn.answer = add(el("div", "answer"));
        turn.answer.appendChild(el("div", "answer-body"));
        turn.answerText = data.answer;
        renderAnswer(turn);
      }
      const usage = data.usage || {};
      turn.answer.appendChild(el("div", "footer",
        "iterations " + data.iterations + " · tokens " + (usage.total_tokens || 0) +
        " (in " + (usage.input_tokens || 0) + ", out " + (usage.output_tokens || 0) + ") · " +
        Number(data.elapsed || 0).toFixed(1) + " s" + servedBy(data)));
    }
  }
})();
