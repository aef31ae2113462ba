// Client-side search over the live memories: search-index.js sets window.sandmanSearchIndex
// to [{n: name, d: description, t: type, b: bank, u: page url, x: body}]. Results are built
// with textContent only, so memory text never becomes markup.
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

  function show(query) {
    var terms = words(query);
    list.textContent = "";
    if (terms.length === 0) {
      status.textContent = "Type a word to search every live memory.";
      return;
    }
    var found = 0;
    for (var i = 0; i < index.length && found < LIMIT; i++) {
      var item = index[i];
      var hay = (item.n + " " + item.d + " " + item.b + " " + item.x).toLowerCase();
      if (!terms.every(function (t) { return hay.indexOf(t) >= 0; })) { continue; }
      found++;
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = safeUrl(item.u);
      a.textContent = item.n;
      li.appendChild(a);
      var meta = document.createElement("div");
      meta.className = "quiet";
      meta.textContent = item.b + " · " + item.t;
      li.appendChild(meta);
      var text = document.createElement("div");
      text.textContent = snippet(item.d + " — " + item.x, terms[0]);
      li.appendChild(text);
      list.appendChild(li);
    }
    status.textContent = found === 0 ? "No memory matches." :
      (found >= LIMIT ? "The first " + LIMIT + " matches." : found + (found === 1 ? " match." : " matches."));
  }

  var query = new URLSearchParams(window.location.search).get("q") || "";
  input.value = query;
  show(query);
  input.addEventListener("input", function () { show(input.value); });
}());
