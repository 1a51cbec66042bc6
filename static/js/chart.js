// Draws the figure whose data sits in the json_script tag "chart-data" into #price-chart.
// A figure may carry, besides Plotly's data and layout:
//   x        the dates, once: every trace without an x of its own gets them (the JSON stays small);
//   config   Plotly's config (the locale: rupees grouped in lakhs);
//   rescale  {y: [prices to keep in view], axes: {axis id: "price" | "zero" | "span"},
//            levels: {label name: price}}: when the date range changes (range buttons, zoom) each
//            named y axis fits what is visible and the level labels are spread again.
(function () {
  "use strict";
  const holder = document.getElementById("price-chart");
  const data = document.getElementById("chart-data");
  if (!holder || !data || typeof Plotly === "undefined") return;
  const figure = JSON.parse(data.textContent);
  if (figure.x) {
    figure.data.forEach(function (trace) {
      if (trace.x === undefined) trace.x = figure.x;
    });
  }
  const config = Object.assign({responsive: true, displaylogo: false}, figure.config || {});
  // On a phone the legend would wrap over the range buttons; the pane titles and hover still name each line.
  if (holder.clientWidth < 600 && figure.rescale) figure.layout.showlegend = false;

  function axisKey(id) { return "yaxis" + id.slice(1); }

  function visibleIndexes(range) {
    const dates = figure.x || [];
    const wanted = [];
    for (let i = 0; i < dates.length; i += 1) {
      if (!range || (dates[i] >= String(range[0]).slice(0, 10) && dates[i] <= String(range[1]))) wanted.push(i);
    }
    return wanted;
  }

  function extent(values, into) {
    values.forEach(function (value) {
      if (typeof value === "number" && isFinite(value)) {
        into.low = Math.min(into.low, value);
        into.high = Math.max(into.high, value);
      }
    });
  }

  function fitted(range) {
    const rescale = figure.rescale || {};
    const axes = rescale.axes || {};
    const indexes = visibleIndexes(range);
    const update = {};
    Object.keys(axes).forEach(function (id) {
      const span = {low: Infinity, high: -Infinity};
      figure.data.forEach(function (trace) {
        if ((trace.yaxis || "y") !== id || trace.x !== figure.x) return;
        if (axes[id] === "price" && trace.type !== "candlestick") return;  // overlays may run off
        const columns = trace.type === "candlestick" ? [trace.low, trace.high] : [trace.y];
        columns.forEach(function (column) {
          extent(indexes.map(function (i) { return column[i]; }), span);
        });
      });
      if (axes[id] === "price") extent(rescale.y || [], span);
      if (!isFinite(span.low)) return;
      if (axes[id] === "zero") span.low = Math.min(0, span.low);
      const pad = Math.max(span.high - span.low, Math.abs(span.high) * 0.01) * 0.06;
      const range = [axes[id] === "zero" ? span.low : span.low - pad, span.high + pad];
      update[axisKey(id) + ".range"] = range;
      if (axes[id] === "price") Object.assign(update, spreadLabels(range));
    });
    return update;
  }

  // The level labels sit in the right margin at their prices, pushed apart where they would touch
  // (the same rule as charts.py's _spread_labels, redone for the new price range).
  function spreadLabels(range) {
    const levels = (figure.rescale || {}).levels || {};
    const notes = figure.layout.annotations || [];
    const domain = (figure.layout.yaxis || {}).domain || [0, 1];
    const size = holder._fullLayout && holder._fullLayout._size;  // the margins Plotly grew (legend)
    const plotHeight = size ? size.h : figure.layout.height - figure.layout.margin.t - figure.layout.margin.b;
    const gap = ((figure.rescale || {}).label_gap_px || 16) * (range[1] - range[0]) / (plotHeight * (domain[1] - domain[0]));
    const placed = notes.map(function (note, index) { return {index: index, price: levels[note.name]}; })
      .filter(function (item) { return typeof item.price === "number"; })
      .sort(function (a, b) { return a.price - b.price; });
    const update = {};
    let previous = null;
    placed.forEach(function (item) {
      item.y = previous === null ? item.price : Math.max(item.price, previous + gap);
      previous = item.y;
    });
    const overflow = previous === null ? 0 : previous - (range[1] - gap / 2);
    placed.forEach(function (item) {
      update["annotations[" + item.index + "].y"] = overflow > 0 ? item.y - overflow : item.y;
    });
    return update;
  }

  function onRelayout(event) {
    if (!event) return;
    let range = null;
    if (event["xaxis.range[0]"] !== undefined) range = [event["xaxis.range[0]"], event["xaxis.range[1]"]];
    else if (event["xaxis.range"]) range = event["xaxis.range"];
    else if (!event["xaxis.autorange"]) return;
    const update = fitted(range);
    if (Object.keys(update).length) Plotly.relayout(holder, update);
  }

  Plotly.newPlot(holder, figure.data, figure.layout, config).then(function () {
    if (figure.rescale && figure.rescale.axes) {
      const initial = fitted(figure.layout.xaxis && figure.layout.xaxis.range);
      holder.on("plotly_relayout", onRelayout);
      return Object.keys(initial).length ? Plotly.relayout(holder, initial) : null;
    }
    return null;
  }).then(function () { holder.dataset.rendered = "true"; });
})();
