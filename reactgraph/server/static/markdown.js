// A small, safe markdown renderer for the streamed answer (SPEC §8: the answer is markdown).
// Safety: the source is HTML-escaped first, so no tag or attribute from the model survives;
// links keep only http(s), mailto and relative targets. Supported: headings, paragraphs,
// bold, italic, inline code, fenced code blocks, bullet and numbered lists, tables,
// block quotes, links and horizontal rules.
"use strict";

(function (global) {
  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  function safeHref(escaped) {
    const url = escaped.replace(/&amp;/g, "&").trim();
    if (/^(https?:|mailto:)/i.test(url) || /^[/#?.]/.test(url) || !/^[a-z][a-z0-9+.-]*:/i.test(url)) {
      return escaped.trim();
    }
    return null;
  }

  // Inline markup on escaped text: code spans are cut out first so nothing inside them
  // is formatted.
  function inline(escaped) {
    const codes = [];
    let text = escaped.replace(/`([^`]+)`/g, function (_, code) {
      codes.push("<code>" + code + "</code>");
      return "\u0000" + (codes.length - 1) + "\u0000";
    });
    text = text.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, function (whole, label, href) {
      const target = safeHref(href);
      return target === null ? label : '<a href="' + target + '" target="_blank" rel="noopener noreferrer">' + label + "</a>";
    });
    text = text.replace(/\*\*([^*]+)\*\*|__([^_]+)__/g, function (_, a, b) { return "<strong>" + (a || b) + "</strong>"; });
    text = text.replace(/(^|[^*\w])\*([^*\s][^*]*)\*|(^|[^_\w])_([^_\s][^_]*)_(?!\w)/g, function (_, p1, a, p2, b) {
      return (p1 !== undefined ? p1 : p2) + "<em>" + (a !== undefined ? a : b) + "</em>";
    });
    return text.replace(/\u0000(\d+)\u0000/g, function (_, i) { return codes[Number(i)]; });
  }

  function splitRow(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|")) row = row.slice(0, -1);
    return row.split("|").map(function (cell) { return cell.trim(); });
  }

  const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
  const BULLET = /^\s*[-*+]\s+(.*)$/;
  const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;

  function renderMarkdown(source) {
    const lines = escapeHtml(String(source).replace(/\r\n?/g, "\n")).split("\n");
    const out = [];
    let paragraph = [];
    const flush = function () {
      if (paragraph.length) out.push("<p>" + inline(paragraph.join("\n")).replace(/\n/g, "<br>") + "</p>");
      paragraph = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
      if (fence) {
        flush();
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        const lang = fence[2] ? ' class="language-' + fence[2] + '"' : "";
        out.push("<pre><code" + lang + ">" + body.join("\n") + "</code></pre>");
        continue;
      }
      const heading = line.match(/^\s*(#{1,6})\s+(.*?)\s*#*\s*$/);
      if (heading) {
        flush();
        out.push("<h" + heading[1].length + ">" + inline(heading[2]) + "</h" + heading[1].length + ">");
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); out.push("<hr>"); continue; }
      if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
        flush();
        const head = splitRow(line);
        let html = "<table><thead><tr>" + head.map(function (c) { return "<th>" + inline(c) + "</th>"; }).join("") + "</tr></thead><tbody>";
        i += 2;
        while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
          html += "<tr>" + splitRow(lines[i]).map(function (c) { return "<td>" + inline(c) + "</td>"; }).join("") + "</tr>";
          i++;
        }
        i--;
        out.push(html + "</tbody></table>");
        continue;
      }
      const listMatch = line.match(BULLET) || line.match(NUMBERED);
      if (listMatch) {
        flush();
        const ordered = !line.match(BULLET);
        const pattern = ordered ? NUMBERED : BULLET;
        const items = [];
        while (i < lines.length && lines[i].match(pattern)) items.push(inline(lines[i++].match(pattern)[1]));
        i--;
        const tag = ordered ? "ol" : "ul";
        out.push("<" + tag + ">" + items.map(function (item) { return "<li>" + item + "</li>"; }).join("") + "</" + tag + ">");
        continue;
      }
      const quote = line.match(/^\s*&gt;\s?(.*)$/);
      if (quote) {
        flush();
        const quoted = [];
        while (i < lines.length && lines[i].match(/^\s*&gt;\s?(.*)$/)) quoted.push(lines[i++].match(/^\s*&gt;\s?(.*)$/)[1]);
        i--;
        out.push("<blockquote>" + inline(quoted.join("\n")).replace(/\n/g, "<br>") + "</blockquote>");
        continue;
      }
      if (!line.trim()) { flush(); continue; }
      paragraph.push(line);
    }
    flush();
    return out.join("\n");
  }

  global.renderMarkdown = renderMarkdown;
  global.escapeHtml = escapeHtml;
})(window);
