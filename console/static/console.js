/* minikafka console: the live parts are htmx load polling (each answer brings the next
   request, see app.py); this file only retries after a failed request and draws the chart. */
(function () {
  "use strict";

  // A live request that failed (console restarting, network): the old content stays and the
  // same request is made again two seconds later.
  document.addEventListener("htmx:afterRequest", function (e) {
    var elt = e.detail && e.detail.elt;
    if (elt && elt.id === "live" && !e.detail.successful) {
      setTimeout(function () { if (elt.isConnected) { htmx.trigger(elt, "retry"); } }, 2000);
    }
  });

  // HWM and LSO of the selected partition over the last minutes (uPlot), refreshed every second.
  function startChart() {
    var el = document.getElementById("chart");
    if (!el || typeof uPlot === "undefined") { return; }
    var url = "/api/history?topic=" + encodeURIComponent(el.dataset.topic) +
              "&partition=" + encodeURIComponent(el.dataset.partition);
    var plot = null;
    function options() {
      return {
        width: Math.max(el.clientWidth, 300), height: 220,
        tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
        scales: { x: { time: true } },
        axes: [{}, { size: 80 }],
        series: [
          {},
          { label: "high watermark", stroke: "#1d4ed8", width: 2 },
          { label: "last stable offset", stroke: "#b91c1c", width: 2, dash: [6, 4] }
        ]
      };
    }
    function draw(d) {
      var data = [d.t, d.hwm, d.lso];
      if (plot === null) { plot = new uPlot(options(), data, el); } else { plot.setData(data); }
    }
    function tick() {
      fetch(url, { cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (d) { if (d) { draw(d); } })
        .catch(function () { /* the console is away: try again at the next tick */ })
        .then(function () { setTimeout(tick, 1000); });
    }
    window.addEventListener("resize", function () {
      if (plot !== null) { plot.setSize({ width: Math.max(el.clientWidth, 300), height: 220 }); }
    });
    tick();
  }
  document.addEventListener("DOMContentLoaded", startChart);
})();
