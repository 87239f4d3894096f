(function () {
  "use strict";
  var table = document.getElementById("pages");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var input = document.getElementById("page-filter");
  var verdict = document.getElementById("verdict-filter");
  var shown = document.getElementById("pages-shown");
  // the verdict cell (the fourth) is what the filter reads and what gets its colour
  rows.forEach(function (row) { row.cells[3].className = "v-" + row.cells[3].textContent; });
  function apply() {
    var q = (input.value || "").toLowerCase();
    var v = verdict.value;
    var n = 0;
    rows.forEach(function (row) {
      var ok = (!q || row.textContent.toLowerCase().indexOf(q) >= 0) &&
               (!v || row.cells[3].textContent === v);
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
  }
  input.addEventListener("input", apply);
  verdict.addEventListener("change", apply);
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) {
        c.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var numeric = th.classList.contains("n");
      rows.sort(function (a, b) {
        var x = a.cells[col].textContent;
        var y = b.cells[col].textContent;
        var r = numeric ? (parseFloat(x || "-1") - parseFloat(y || "-1")) : x.localeCompare(y);
        return asc ? r : -r;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
}());
