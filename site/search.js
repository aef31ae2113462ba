// Search over the live memories. Served by `sandman report serve`, the page asks the server's
// search.json (sandman's full-text index: ranked, the matching line shown, as `sandman search`);
// opened from disk, or when that fails, it searches search-index.js, which sets
// window.sandmanSearchIndex to [{n: name, d: description, t: type, b: bank, u: page url, x: body}].
// Results are built with textContent only, so memory text never becomes markup.
(function () {
  "use strict";
  var index = window.sandmanSearchIndex || [];
  var input = document.getElementById("search-input");
  var status = document.getElementById("search-status");
  var list = document.getElementById("search-results");
  var LIMIT = 100;

  function words(query) {
    return query.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
  }

  function snippet(text, word) {
    var at = text.toLowerCase().indexOf(word);
    if (at < 0) { return text.slice(0, 160); }
    var start = Math.max(0, at - 60);
    return (start > 0 ? "…" : "") + text.slice(start, start + 160) + (start + 160 < text.length ? "…" : "");
  }

  function safeUrl(url) {
    // The index is ours, but a link is only ever a relative page path.
    return typeof url === "string" && url.indexOf(":") < 0 && url.indexOf("//") !== 0 ? url : "#";
  }

  var remote = window.location.protocol === "http:" || window.location.protocol === "https:";
  var asked = 0;

  function item(entry, text) {
    var li = document.createElement("li");
    var a = document.createElement("a");
    a.href = safeUrl(entry.u);
    a.textContent = entry.n;
    li.appendChild(a);
    var meta = document.createElement("div");
    meta.className = "quiet";
    meta.textContent = entry.b + " · " + entry.t;
    li.appendChild(meta);
    var line = document.createElement("div");
    line.textContent = text;
    li.appendChild(line);
    list.appendChild(li);
  }

  function counted(found) {
    status.textContent = found === 0 ? "No memory matches." :
      (found >= LIMIT ? "The first " + LIMIT + " matches." : found + (found === 1 ? " match." : " matches."));
  }

  function local(terms) {
    var found = 0;
    for (var i = 0; i < index.length && found < LIMIT; i++) {
      var entry = index[i];
      var hay = (entry.n + " " + entry.d + " " + entry.b + " " + entry.x).toLowerCase();
      if (!terms.every(function (t) { return hay.indexOf(t) >= 0; })) { continue; }
      found++;
      item(entry, snippet(entry.d + " — " + entry.x, terms[0]));
    }
    counted(found);
  }

  function show(query) {
    var terms = words(query);
    var mine = ++asked;
    list.textContent = "";
    if (terms.length === 0) {
      status.textContent = "Type a word to search every live memory.";
      return;
    }
    if (!remote || !window.fetch) { local(terms); return; }
    window.fetch("search.json?q=" + encodeURIComponent(query)).then(function (response) {
      if (!response.ok) { throw new Error("search.json answered " + response.status); }
      return response.json();
    }).then(function (hits) {
      if (mine !== asked) { return; }
      list.textContent = "";
      hits.slice(0, LIMIT).forEach(function (hit) { item(hit, hit.d + " — " + hit.x); });
      counted(hits.length);
    }).catch(function () {
      if (mine !== asked) { return; }
      remote = false;  // a plain file server, or an old sandman: search in the page from now on
      list.textContent = "";
      local(terms);
    });
  }

  var query = new URLSearchParams(window.location.search).get("q") || "";
  input.value = query;
  show(query);
  input.addEventListener("input", function () { show(input.value); });
}());
