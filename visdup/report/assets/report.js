(function () {
  "use strict";
  var table = document.getElementById("pages");
  var block = document.getElementById("pages-data");
  if (!table || !block) { return; }
  var data = JSON.parse(block.textContent);
  var cols = data.cols;
  var links = { url: 1, duplicate_of: 1, canonical_url: 1 };
  var origin = data.origin;
  // every page, decoded: enumerations from their lists, URLs of the site from their path,
  // a crawled page's URL from its row
  var before = "";
  data.rows.forEach(function (r, i) {
    r[0] = before.slice(0, data.shared[i]) + r[0];
    before = r[0];
  });
  var pages = data.rows.map(function (r) {
    var rec = {};
    cols.forEach(function (c, i) {
      var v = r[i];
      if (data.enums[c]) { v = data.enums[c][v]; }
      rec[c] = v === null || v === undefined ? "" : v;
    });
    return rec;
  });
  pages.forEach(function (rec) {
    Object.keys(links).forEach(function (c) {
      var v = rec[c];
      if (typeof v === "number") { rec[c] = data.rows[v][0]; v = rec[c]; }
      if (typeof v === "string" && v.charAt(0) === "/") { rec[c] = origin + v; }
    });
  });
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var shownCols = heads.map(function (th) { return th.getAttribute("data-col"); });
  var numeric = {};
  heads.forEach(function (th) { if (th.classList.contains("n")) { numeric[th.getAttribute("data-col")] = 1; } });
  var body = table.tBodies[0];
  var input = document.getElementById("page-filter");
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var shown = document.getElementById("pages-shown");
  var matching = document.getElementById("pages-matching");
  var order = null;
  function short(url) {
    var u = String(url);
    if (origin && u.indexOf(origin) === 0 && "/?".indexOf(u.charAt(origin.length) || "/") >= 0) {
      return u.slice(origin.length) || "/";
    }
    return u;
  }
  function wanted() {
    var w = [];
    selects.forEach(function (s) { if (s.value) { w.push([s.getAttribute("data-filter"), s.value]); } });
    return w;
  }
  function matches(skip) {
    var w = wanted();
    var q = (input.value || "").toLowerCase();
    return pages.filter(function (rec) {
      for (var i = 0; i < w.length; i += 1) {
        if (w[i][0] !== skip && String(rec[w[i][0]]) !== w[i][1]) { return false; }
      }
      return !q || (rec.url + " " + rec.title).toLowerCase().indexOf(q) >= 0;
    });
  }
  function cellOf(rec, c) {
    var td = document.createElement("td");
    var v = rec[c];
    if (numeric[c]) { td.className = "n"; }
    if (links[c] && v) {
      if (/^https?:/i.test(v)) {
        var a = document.createElement("a");
        a.href = v;
        a.textContent = short(v);
        td.appendChild(a);
      } else {
        td.textContent = v;
      }
    } else if (/_similarity$/.test(c) && v !== "") {
      td.textContent = Number(v).toFixed(3);
    } else {
      td.textContent = String(v);
    }
    return td;
  }
  function draw(list) {
    var frag = document.createDocumentFragment();
    list.slice(0, data.limit).forEach(function (rec) {
      var tr = document.createElement("tr");
      cols.forEach(function (c) { tr.setAttribute("data-" + c, String(rec[c])); });
      shownCols.forEach(function (c) { tr.appendChild(cellOf(rec, c)); });
      frag.appendChild(tr);
    });
    body.textContent = "";
    body.appendChild(frag);
    shown.textContent = String(Math.min(list.length, data.limit));
    matching.textContent = String(list.length);
  }
  function apply() {
    var list = matches(null);
    if (order) {
      var col = order[0];
      var asc = order[1];
      list = list.slice().sort(function (a, b) {
        var x = a[col];
        var y = b[col];
        var r = numeric[col] ? (parseFloat(x === "" ? "-1" : x) - parseFloat(y === "" ? "-1" : y))
                             : String(x).localeCompare(String(y));
        return asc ? r : -r;
      });
    }
    draw(list);
    // each filter counts the pages the other filters let through
    selects.forEach(function (s) {
      var col = s.getAttribute("data-filter");
      var counts = {};
      var rest = matches(col);
      rest.forEach(function (rec) { counts[rec[col]] = (counts[rec[col]] || 0) + 1; });
      Array.prototype.forEach.call(s.options, function (o) {
        var label = o.value ? o.value : "every " + col;
        o.textContent = label + " (" + (o.value ? (counts[o.value] || 0) : rest.length) + ")";
      });
    });
  }
  input.addEventListener("input", apply);
  selects.forEach(function (s) { s.addEventListener("change", apply); });
  heads.forEach(function (th) {
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(function (c) { c.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      order = [th.getAttribute("data-col"), asc];
      apply();
    });
  });
  draw(pages);
  function cell(v) {
    var s = String(v);
    if (typeof v === "string" && /^[=+\-@\t\r]/.test(s)) { s = "'" + s; }
    return /[",\r\n]/.test(s) ? "\"" + s.replace(/"/g, "\"\"") + "\"" : s;
  }
  function csv(head, lines) {
    return [head].concat(lines).map(function (l) { return l.map(cell).join(","); }).join("\r\n") + "\r\n";
  }
  function offer(a, text) {
    if (a.href.indexOf("blob:") === 0) { URL.revokeObjectURL(a.href); }
    a.href = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  }
  var exportPages = document.getElementById("export-pages");
  exportPages.addEventListener("click", function () {
    offer(exportPages, csv(cols, matches(null).map(function (rec) {
      return cols.map(function (c) { return rec[c]; });
    })));
  });
  var exportGroups = document.getElementById("export-groups");
  var groupCols = ["group", "severity", "cause", "role", "url", "kind", "content_similarity",
    "layout_similarity", "canonical", "canonical_url", "duplicate_cause"];
  exportGroups.addEventListener("click", function () {
    var lines = [];
    data.groups.forEach(function (g, n) {
      g.slice(2).forEach(function (i, k) {
        var rec = pages[i];
        if (!rec) { return; }
        lines.push([n + 1, g[0], g[1], k ? "copy" : "original", rec.url, rec.kind,
          rec.content_similarity, rec.layout_similarity, rec.canonical, rec.canonical_url, rec.cause]);
      });
    });
    offer(exportGroups, csv(groupCols, lines));
  });
}());
