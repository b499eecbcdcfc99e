// A small, safe markdown renderer for the streamed answer (SPEC §8: the answer is markdown).
//
// Safety: the renderer builds DOM nodes; the model's text only ever becomes text
// nodes, and the one attribute it can reach, a link's href, is set from the URL the browser's
// own parser makes of it (control characters, case and whitespace normalized first), kept
// only when its scheme is http, https or mailto. No HTML string from the model is parsed.
//
// Speed: every step is linear in the text (no backtracking regular expressions on it;
// searches for a closing `]`, `)`, backtick or emphasis mark remember where they stopped),
// and MarkdownView renders a growing answer incrementally: blocks that end at a blank line
// outside a code fence are rendered once; only the open last block is rendered again.
//
// Supported: headings, paragraphs, bold, italic, inline code, fenced code blocks, bullet
// and numbered lists, tables, block quotes, links and horizontal rules.
"use strict";

(function (global) {
  const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
  const BULLET = /^\s*[-*+]\s+(.*)$/;
  const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;
  const QUOTE = /^\s*>\s?(.*)$/;
  const FENCE = /^\s*(```|~~~)\s*([\w+-]*)\s*$/;
  const RULE = /^\s*([-*_])(\s*\1){2,}\s*$/;
  const HEADING = /^\s*(#{1,6})\s+(.*)$/;
  const WORD = /[A-Za-z0-9_]/;
  const SPACE = /\s/;

  function escapeHtml(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  // The href to use for a link target, or null: the browser's URL parser decides what the
  // target is (it drops leading control characters and spaces, lowercases the scheme,
  // resolves relative targets against the page), and only http(s) and mailto pass.
  function safeHref(raw) {
    let url;
    try {
      url = new URL(raw, document.baseURI);
    } catch (error) {
      return null;
    }
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  }

  // finder(text, test)(from): the index of the first character at or after `from` that
  // passes `test`, or -1. Calls with growing `from` reuse the last answer, so a sequence of
  // calls over one text scans it once.
  function finder(text, test) {
    let lastFrom = Infinity;
    let lastFound = -1;
    return function (from) {
      if (from >= lastFrom && (lastFound === -1 || from <= lastFound)) return lastFound;
      lastFrom = from;
      lastFound = -1;
      for (let i = from; i < text.length; i++) {
        if (test(text[i])) { lastFound = i; break; }
      }
      return lastFound;
    };
  }

  function el(tag, text) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Bold (**x**, __x__) and italic (*x*, _x_ between non-word characters) on plain text.
  function appendEmphasis(parent, text) {
    const nextStar = finder(text, function (c) { return c === "*"; });
    const nextUnder = finder(text, function (c) { return c === "_"; });
    let plain = 0;
    let i = 0;
    const flush = function (end) { if (end > plain) parent.appendChild(document.createTextNode(text.slice(plain, end))); };
    while (i < text.length) {
      const c = text[i];
      if (c !== "*" && c !== "_") { i++; continue; }
      const next = c === "*" ? nextStar : nextUnder;
      if (text[i + 1] === c) {
        const close = next(i + 2);
        if (close > i + 2 && text[close + 1] === c) {
          flush(i);
          const strong = el("strong");
          appendEmphasis(strong, text.slice(i + 2, close));
          parent.appendChild(strong);
          i = plain = close + 2;
          continue;
        }
        i += 2;
        continue;
      }
      const before = i > 0 ? text[i - 1] : "";
      const opens = before !== c && !WORD.test(before) && i + 1 < text.length && !SPACE.test(text[i + 1]);
      if (opens) {
        const close = next(i + 1);
        if (close !== -1 && (c === "*" || !WORD.test(text[close + 1] || ""))) {
          flush(i);
          parent.appendChild(el("em", text.slice(i + 1, close)));
          i = plain = close + 1;
          continue;
        }
      }
      i++;
    }
    flush(text.length);
  }

  // Code spans (`x`), links ([label](target)) and emphasis on one block's text.
  function appendInline(parent, text) {
    const nextTick = finder(text, function (c) { return c === "`"; });
    const nextClose = finder(text, function (c) { return c === "]"; });
    const nextStop = finder(text, function (c) { return c === ")" || SPACE.test(c); });
    let plain = 0;
    let i = 0;
    const flush = function (end) { if (end > plain) appendEmphasis(parent, text.slice(plain, end)); };
    while (i < text.length) {
      const c = text[i];
      if (c === "`") {
        const close = nextTick(i + 1);
        if (close > i + 1) {
          flush(i);
          parent.appendChild(el("code", text.slice(i + 1, close)));
          i = plain = close + 1;
          continue;
        }
      } else if (c === "[") {
        const close = nextClose(i + 1);
        if (close > i + 1 && text[close + 1] === "(") {
          const stop = nextStop(close + 2);
          if (stop > close + 2 && text[stop] === ")") {
            flush(i);
            const label = text.slice(i + 1, close);
            const href = safeHref(text.slice(close + 2, stop));
            if (href === null) {
              appendEmphasis(parent, label);
            } else {
              const link = el("a");
              link.setAttribute("href", href);
              link.setAttribute("target", "_blank");
              link.setAttribute("rel", "noopener noreferrer");
              appendEmphasis(link, label);
              parent.appendChild(link);
            }
            i = plain = stop + 1;
            continue;
          }
        }
      }
      i++;
    }
    flush(text.length);
  }

  // Inline markup with line breaks kept as <br>.
  function appendLines(parent, lines) {
    lines.forEach(function (line, index) {
      if (index) parent.appendChild(el("br"));
      appendInline(parent, line);
    });
  }

  // A heading's text without its closing run of `#` and the spaces around it.
  function withoutClosingHashes(text) {
    let end = text.length;
    while (end > 0 && SPACE.test(text[end - 1])) end--;
    while (end > 0 && text[end - 1] === "#") end--;
    while (end > 0 && SPACE.test(text[end - 1])) end--;
    return text.slice(0, end);
  }

  function splitRow(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|")) row = row.slice(0, -1);
    return row.split("|").map(function (cell) { return cell.trim(); });
  }

  function isTableRule(line) {
    if (!line.includes("-")) return false;
    return splitRow(line).every(function (cell) {
      const inner = cell.replace(/^:/, "").replace(/:$/, "");
      return inner.length > 0 && inner.split("").every(function (ch) { return ch === "-"; });
    });
  }

  function tableRow(cells, tag) {
    const row = el("tr");
    cells.forEach(function (cell) { const node = el(tag); appendInline(node, cell); row.appendChild(node); });
    return row;
  }

  // The blocks of `source` (whole lines) appended to `parent`.
  function appendBlocks(parent, source) {
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    let paragraph = [];
    const flush = function () {
      if (paragraph.length) { const p = el("p"); appendLines(p, paragraph); parent.appendChild(p); }
      paragraph = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = line.match(FENCE);
      if (fence) {
        flush();
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        const pre = el("pre");
        const code = el("code", body.join("\n"));
        if (fence[2]) code.className = "language-" + fence[2];
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      const heading = line.match(HEADING);
      if (heading) {
        flush();
        const node = el("h" + heading[1].length);
        appendInline(node, withoutClosingHashes(heading[2]));
        parent.appendChild(node);
        continue;
      }
      if (RULE.test(line)) { flush(); parent.appendChild(el("hr")); continue; }
      if (line.includes("|") && i + 1 < lines.length && isTableRule(lines[i + 1])) {
        flush();
        const table = el("table");
        const head = el("thead");
        head.appendChild(tableRow(splitRow(line), "th"));
        const body = el("tbody");
        i += 2;
        while (i < lines.length && lines[i].includes("|") && lines[i].trim()) body.appendChild(tableRow(splitRow(lines[i++]), "td"));
        i--;
        table.appendChild(head);
        table.appendChild(body);
        parent.appendChild(table);
        continue;
      }
      const listMatch = line.match(BULLET) || line.match(NUMBERED);
      if (listMatch) {
        flush();
        const ordered = !BULLET.test(line);
        const pattern = ordered ? NUMBERED : BULLET;
        const list = el(ordered ? "ol" : "ul");
        let item;
        while (i < lines.length && (item = lines[i].match(pattern))) {
          const li = el("li");
          appendInline(li, item[1]);
          list.appendChild(li);
          i++;
        }
        i--;
        parent.appendChild(list);
        continue;
      }
      if (QUOTE.test(line)) {
        flush();
        const quoted = [];
        let match;
        while (i < lines.length && (match = lines[i].match(QUOTE))) { quoted.push(match[1]); i++; }
        i--;
        const quote = el("blockquote");
        appendLines(quote, quoted);
        parent.appendChild(quote);
        continue;
      }
      if (!line.trim()) { flush(); continue; }
      paragraph.push(line);
    }
    flush();
  }

  // The whole of `source` as HTML text (the serialization of the nodes the renderer builds).
  function renderMarkdown(source) {
    const holder = document.createElement("div");
    appendBlocks(holder, source);
    return holder.innerHTML;
  }

  // The words of `source` without its Markdown marks, for a line shown as plain text (a plan
  // step's task, the analysis line, a warning): rendered as for an answer, then read back as
  // text, a space between blocks and table cells, runs of spaces made one.
  function markdownText(source) {
    const holder = document.createElement("div");
    appendBlocks(holder, String(source || ""));
    holder.querySelectorAll("p, li, th, td, h1, h2, h3, h4, h5, h6, pre, blockquote, br").forEach(function (node) {
      node.after(document.createTextNode(" "));
    });
    return holder.textContent.replace(/\s+/g, " ").trim();
  }

  // A growing answer rendered into `container`: update(text) with the whole text so far
  // (each call's text extends the last one). Blocks closed by a blank line outside a fence
  // are rendered once and kept; the open last block is rendered again on each update.
  function MarkdownView(container) {
    this.container = container;
    this.reset();
  }

  MarkdownView.prototype.reset = function () {
    this.container.textContent = "";
    this.source = "";
    this.stable = 0;      // source[0:stable] is rendered in kept nodes
    this.scanned = 0;     // start of the first line not classified yet
    this.fence = null;    // the open fence's marker, while inside a fenced block
    this.tail = [];       // nodes of source[stable:]
  };

  MarkdownView.prototype.update = function (text) {
    text = String(text).replace(/\r\n?/g, "\n");
    if (text.length < this.source.length || !text.startsWith(this.source)) this.reset();
    this.source = text;
    let end;
    while ((end = text.indexOf("\n", this.scanned)) !== -1) {
      const line = text.slice(this.scanned, end);
      this.scanned = end + 1;
      if (this.fence !== null) {
        if (line.trim().startsWith(this.fence)) this.fence = null;
      } else {
        const open = line.match(FENCE);
        if (open) this.fence = open[1];
        else if (!line.trim()) this.commit(this.scanned);
      }
    }
    this.tail.forEach(function (node) { node.remove(); });
    const fragment = document.createDocumentFragment();
    appendBlocks(fragment, text.slice(this.stable));
    this.tail = Array.from(fragment.childNodes);
    this.container.appendChild(fragment);
  };

  MarkdownView.prototype.commit = function (boundary) {
    this.tail.forEach(function (node) { node.remove(); });
    this.tail = [];
    const fragment = document.createDocumentFragment();
    appendBlocks(fragment, this.source.slice(this.stable, boundary));
    this.container.appendChild(fragment);
    this.stable = boundary;
  };

  global.renderMarkdown = renderMarkdown;
  global.markdownText = markdownText;
  global.MarkdownView = MarkdownView;
  global.escapeHtml = escapeHtml;
})(window);
