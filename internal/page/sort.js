(function () {
  "use strict";
  // Milliseconds in a time unit, so "950 ms" sorts below "1.2 s".
  var scale = { ns: 1e-6, "\u00b5s": 1e-3, "\u03bcs": 1e-3, us: 1e-3, ms: 1, s: 1e3, min: 6e4, h: 3.6e6 };
  var number = /^[\[(~\u2248<>\u2264\u2265]?\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*([a-z\u00b5\u03bc]+)?/i;
  // A cell's sort key: a number when it starts with one ("6.67 ms",
  // "+1.7%", "1,234", "[-2.1, +0.4]"), else its text; blank, "-", "n/a"
  // sort last either way.
  function key(cell) {
    var text = cell.textContent.trim();
    if (text === "" || text === "-" || text === "\u2013" || text === "\u2014" || /^n\/?a$/i.test(text)) {
      return { blank: true };
    }
    var plain = text.replace(/\u2212/g, "-").replace(/(\d),(?=\d{3}(?:\D|$))/g, "$1");
    var m = number.exec(plain);
    if (m) {
      var unit = m[2] ? m[2].toLowerCase() : "";
      return { num: parseFloat(m[1]) * (scale[unit] || 1), text: text };
    }
    return { num: null, text: text };
  }
  function compare(a, b, dir) {
    if (a.blank || b.blank) {
      return (a.blank ? 1 : 0) - (b.blank ? 1 : 0);
    }
    if (a.num !== null && b.num !== null) {
      return dir * (a.num - b.num);
    }
    if (a.num !== null || b.num !== null) {
      return dir * (a.num !== null ? -1 : 1);
    }
    return dir * a.text.localeCompare(b.text, undefined, { numeric: true, sensitivity: "base" });
  }
  function sortBy(table, th, col) {
    var body = table.tBodies[0];
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) {
      heads[i].removeAttribute("aria-sort");
    }
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, i: i, key: key(row.cells[col] || row) };
    });
    rows.sort(function (a, b) {
      return compare(a.key, b.key, dir) || a.i - b.i;
    });
    rows.forEach(function (r) {
      body.appendChild(r.row);
    });
  }
  var tables = document.querySelectorAll("main table");
  Array.prototype.forEach.call(tables, function (table) {
    if (!table.tHead || !table.tBodies.length || table.tBodies[0].rows.length < 2) {
      return;
    }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.setAttribute("data-sortable", "");
      th.setAttribute("tabindex", "0");
      th.title = "Sort by this column";
      th.addEventListener("click", function () {
        sortBy(table, th, col);
      });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          sortBy(table, th, col);
        }
      });
    });
  });
})();
