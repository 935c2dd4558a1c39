// treebench results site: draws the figures (Plotly) and the ledger table (DataTables), offline.
"use strict";

function drawFigures() {
  document.querySelectorAll("script.figure-data").forEach(function (node) {
    var host = document.getElementById(node.dataset.target);
    var panels = JSON.parse(node.textContent);
    var points = 0;
    panels.forEach(function (p) {
      var div = document.createElement("div");
      div.className = "panel";
      host.appendChild(div);
      p.traces.forEach(function (t) { points += (t.x || []).length; });
      Plotly.newPlot(div, p.traces, {
        title: { text: p.title, font: { size: 13 } },
        xaxis: { title: { text: p.xlabel }, type: p.xlog ? "log" : "linear" },
        yaxis: { title: { text: p.ylabel } },
        height: 380, margin: { t: 40, r: 10, b: 45, l: 55 }, hovermode: "closest",
      }, { responsive: true, displaylogo: false });
    });
    host.dataset.points = String(points);
  });
}

async function dataTables() {
  // the DataTables bundle is an ES module; a file:// page imports it through a blob URL
  var url = URL.createObjectURL(new Blob([window.TREEBENCH_DT_SRC], { type: "text/javascript" }));
  var mod = await import(url);
  URL.revokeObjectURL(url);
  return mod;
}

function escapeRegex(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

async function drawTables() {
  var nodes = document.querySelectorAll("script.table-data");
  if (!nodes.length || !window.TREEBENCH_DT_SRC) return;
  var DataTable = (await dataTables()).default;
  nodes.forEach(function (node) {
    var table = document.getElementById(node.dataset.target);
    var data = JSON.parse(node.textContent);
    var link = table.dataset.linkKey === "" ? -1 : Number(table.dataset.linkKey);
    var columns = Array.from(table.querySelectorAll("th")).map(function (th, i) {
      var c = { title: th.textContent };
      if (i === link) {
        c.render = function (v, type) {
          return type === "display" ? '<a href="records/' + v + '.json">' + v + "</a>" : v;
        };
      }
      return c;
    });
    var dt = new DataTable(table, { data: data, columns: columns, pageLength: 25, order: [], deferRender: true });
    document.querySelectorAll(".filters input").forEach(function (input) {
      var col = Number(input.dataset.column);
      var values = new Set(data.map(function (r) { return String(r[col]); }));
      input.addEventListener("input", function () {
        var v = input.value.trim();
        var exact = values.has(v);
        dt.column(col).search(v === "" ? "" : exact ? "^" + escapeRegex(v) + "$" : escapeRegex(v), true, false).draw();
      });
    });
    table.dataset.ready = "1";
  });
}

document.addEventListener("DOMContentLoaded", function () {
  if (window.Plotly) drawFigures();
  drawTables();
});
