// Live jobs: while the page shows a job that has not ended (an element
// with data-job and data-running), ask the console for those jobs, and
// only those, at most every 2 seconds (GET {data-poll}?ids=...), and write
// what changed: status, duration, cost, preview, and on a job's page its
// outputs once it ends. It stops when nothing runs, or on any error. The
// page works without it: a refresh shows the same.
(function () {
  "use strict";
  var root = document.querySelector("[data-poll]");
  if (!root || !window.fetch) return;
  var url = root.getAttribute("data-poll");
  var every = 2000;

  function running() {
    var ids = [];
    document.querySelectorAll("[data-job][data-running]").forEach(function (el) {
      var id = el.getAttribute("data-job");
      if (ids.indexOf(id) < 0) ids.push(id);
    });
    return ids;
  }

  function text(el, cell, value) {
    el.querySelectorAll('[data-cell="' + cell + '"]').forEach(function (c) {
      if (value != null && c.textContent !== value) c.textContent = value;
    });
  }

  function media(o, small) {
    var m;
    if (o.kind === "image") {
      m = document.createElement("img");
      m.src = o.url;
      m.alt = small ? "" : "Output";
    } else if (o.kind === "video") {
      m = document.createElement("video");
      m.src = small ? o.url + "#t=0.1" : o.url;
      m.preload = "metadata";
      if (small) { m.muted = true; } else { m.controls = true; }
    } else {
      m = document.createElement("a");
      m.href = o.url;
      m.setAttribute("download", "");
      m.className = small ? "icon" : "button small";
      m.textContent = small ? "◆" : "Download output (" + o.ext + ")";
      if (small) m.title = "3D model or file";
    }
    if (small && o.kind !== "file") { m.width = 48; m.height = 48; }
    if (!small && o.kind !== "file") m.className = "output";
    return m;
  }

  function update(el, j) {
    text(el, "state", j.state);
    text(el, "duration", j.duration);
    text(el, "cost", j.cost);
    if (j.charged) text(el, "charged", j.charged);
    el.setAttribute("data-status", j.status);
    var p = el.querySelector('[data-cell="preview"]');
    if (p && j.preview && !p.getAttribute("data-shown")) {
      p.setAttribute("data-shown", j.preview.url);
      p.replaceChildren(media(j.preview, true));
    }
    if (!j.running) {
      el.removeAttribute("data-running");
      var outs = el.querySelector('[data-cell="outputs"]');
      if (outs && j.outputs && j.outputs.length) {
        outs.replaceChildren.apply(outs, j.outputs.map(function (o) { return media(o, false); }));
      }
      el.querySelectorAll("[data-while-running]").forEach(function (c) { c.hidden = true; });
    }
  }

  function tick() {
    var ids = running();
    if (!ids.length) return;
    fetch(url + "?ids=" + encodeURIComponent(ids.join(",")), {
      credentials: "same-origin", headers: { Accept: "application/json" }
    }).then(function (r) {
      if (!r.ok) throw new Error("poll: " + r.status);
      return r.json();
    }).then(function (body) {
      var got = {};
      (body.jobs || []).forEach(function (j) {
        got[j.id] = true;
        document.querySelectorAll('[data-job="' + j.id + '"]').forEach(function (el) { update(el, j); });
      });
      ids.forEach(function (id) { // unknown now: stop asking
        if (!got[id]) document.querySelectorAll('[data-job="' + id + '"]').forEach(function (el) { el.removeAttribute("data-running"); });
      });
      setTimeout(tick, every);
    }).catch(function () {});
  }

  setTimeout(tick, every);
})();
